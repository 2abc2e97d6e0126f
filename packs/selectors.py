from django.db.models import Count, QuerySet
from django.shortcuts import get_object_or_404

from accounts.models import Membership, Role
from packs.models import Pack


def pack_list_for_user(*, user, project_id: int | None = None) -> QuerySet[Pack]:
    """Packs are an admin's business: only admins of a project see its packs."""
    if not user.is_authenticated:
        return Pack.objects.none()
    admin_projects = Membership.objects.filter(user=user, role=Role.ADMIN).values("project_id")
    qs = Pack.objects.filter(project_id__in=admin_projects).select_related("project", "created_by").annotate(task_count=Count("submissions"))
    if project_id is not None:
        qs = qs.filter(project_id=project_id)
    return qs


def pack_get_for_user(*, user, pk: int) -> Pack:
    return get_object_or_404(pack_list_for_user(user=user), pk=pk)
