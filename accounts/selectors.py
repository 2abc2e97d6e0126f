from django.contrib.auth.models import AnonymousUser
from django.db.models import Case, QuerySet, When
from django.db.models.functions import Lower
from django.http import Http404

from accounts.models import Membership, Project, Role, User


def project_list_for_user(*, user: User | AnonymousUser) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user).distinct()


def authors_anywhere(*, user: User) -> bool:
    """Whether the user may write tasks in any project (an author or an admin)."""
    return Membership.objects.filter(user=user, role__in=[Role.AUTHOR, Role.ADMIN]).exists()


def membership_for(*, user: User | AnonymousUser, project_id: int) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, project_id=project_id).select_related("project").first()


def membership_get(*, user: User, project_id: int) -> Membership:
    """The user's membership of a project; 404 when there is none, so that a project the
    user does not belong to is indistinguishable from one that does not exist."""
    membership = membership_for(user=user, project_id=project_id)
    if membership is None:
        raise Http404("No such project.")
    return membership


def project_get_for_user(*, user: User, pk: int) -> Project:
    return membership_get(user=user, project_id=pk).project


def project_members(*, project_id: int) -> QuerySet[Membership]:
    """The project's members, admins first, then reviewers, then authors, by user name."""
    rank = Case(When(role=Role.ADMIN, then=0), When(role=Role.REVIEWER, then=1), default=2)
    return (Membership.objects.filter(project_id=project_id).select_related("user")
            .annotate(rank=rank).order_by("rank", Lower("user__username"), "pk"))


def project_admin_get(*, user: User, project_id: int) -> Membership:
    """The user's membership of a project they administer; 404 for anyone else, as the
    other admin-only pages answer (a member who is not an admin is not told they exist)."""
    membership = membership_get(user=user, project_id=project_id)
    if not membership.can_export:
        raise Http404("No such page.")
    return membership


def member_get_for_admin(*, user: User, pk: int) -> Membership:
    """A membership of a project the user administers; 404 otherwise."""
    membership = Membership.objects.select_related("user", "project").filter(pk=pk).first()
    if membership is None:
        raise Http404("No such member.")
    try:
        project_admin_get(user=user, project_id=membership.project_id)
    except Http404:
        raise Http404("No such member.") from None  # as for an id that does not exist
    return membership


def api_token_key(*, user: User) -> str | None:
    """The user's API token, or None when they have none (accounts.services makes one)."""
    from rest_framework.authtoken.models import Token

    return Token.objects.filter(user=user).values_list("key", flat=True).first()
