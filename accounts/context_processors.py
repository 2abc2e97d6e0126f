"""What the top navigation needs on every page, computed only if the page shows it."""

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from accounts.models import Role
from accounts.selectors import project_list_for_user


def navigation(request: HttpRequest) -> dict:
    """`admin_projects`: up to two of the projects the user administers (one query, run only
    when the template asks). Packs shows in the navigation when there is one: it leads to
    that project's packs, or, for an admin of several, to the page listing them all."""
    user = request.user
    if not user.is_authenticated:
        return {}

    def administered() -> list[dict]:
        projects = project_list_for_user(user=user).filter(memberships__user=user, memberships__role=Role.ADMIN)
        return list(projects.order_by("name", "pk").values("pk", "name")[:2])

    return {"admin_projects": SimpleLazyObject(administered)}
