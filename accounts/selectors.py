from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet
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
