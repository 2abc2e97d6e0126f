"""What the top navigation needs on every page, computed only if the page shows it."""

from functools import cache

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from accounts.models import Membership, Role


def navigation(request: HttpRequest) -> dict:
    """`admin_projects`: up to two of the projects the user administers. Packs shows in the
    navigation when there is one: it leads to that project's packs, or, for an admin of
    several, to the page listing them all. `reviews_any`: whether the user reviews in any
    project (as a reviewer or an admin), so only those who can claim submissions are offered
    the review queue. Both from one query, run only when the template asks."""
    user = request.user
    if not user.is_authenticated:
        return {}

    @cache
    def memberships() -> list[tuple[str, int, str]]:
        return list(Membership.objects.filter(user=user, role__in=[Role.REVIEWER, Role.ADMIN])
                    .order_by("project__name", "project_id").values_list("role", "project_id", "project__name"))

    def administered() -> list[dict]:
        return [{"pk": pk, "name": name} for role, pk, name in memberships() if role == Role.ADMIN][:2]

    return {"admin_projects": SimpleLazyObject(administered), "reviews_any": SimpleLazyObject(lambda: bool(memberships()))}
