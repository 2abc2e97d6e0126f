"""The audit trail pages: a task's timeline (also the task page's History, as an htmx
fragment) for the project's members, and the whole project's, filterable, for its admins."""

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.selectors import membership_get
from authoring.selectors import env_task_get_for_user
from core.exceptions import ApplicationError, PermissionRefused
from core.views import REFUSAL_HEADER, UNPROCESSABLE
from reviews.selectors.audit import (
    KINDS,
    AuditFilters,
    audit_entries,
    audit_filters_clean,
    audit_people,
    audit_project_get_for_user,
    audit_timeline,
)

TASK_PAGE = "reviews/task_audit.html"
PROJECT_PAGE = "reviews/project_audit.html"
PAGE_SIZE = 50
FILTERS = ("kind", "actor", "since", "until")


def _asked(request: HttpRequest) -> dict[str, str]:
    return {name: request.GET.get(name, "").strip()[:100] for name in FILTERS}


def _page(request: HttpRequest, rows: QuerySet, asked: dict[str, str]) -> dict:
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    kept = {name: value for name, value in asked.items() if value}
    return {"page": page, "entries": audit_entries(page.object_list), "page_query": f"&{urlencode(kept)}" if kept else "",
            "filter_query": urlencode(kept)}


def _filters(project_id: int, asked: dict[str, str]) -> tuple[AuditFilters, str]:
    try:
        return audit_filters_clean(project_id=project_id, **asked), ""
    except ApplicationError as error:
        return AuditFilters(), error.message


def _form(action: str, project_id: int, asked: dict[str, str], error: str) -> dict:
    return {"asked": asked, "filter_error": error, "filter_action": action, "kinds": KINDS.items(),
            "people": audit_people(project_id=project_id)}


@require_GET
def task_audit(request: HttpRequest, task_pk: int) -> HttpResponse:
    """Oldest first: the story of the task, version by version."""
    asked = _asked(request)
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)  # 404 outside the task's project
    filters, error = _filters(env_task.project_id, asked)
    rows = audit_timeline(env_task=env_task, reader=request.user, **filters.as_kwargs())
    context = {"env_task": env_task, "project": env_task.project,
               **_form(reverse("task-audit", args=[env_task.pk]), env_task.project_id, asked, error)}
    if not error:
        context.update(_page(request, rows, asked))
    template = f"{TASK_PAGE}#task-audit" if request.htmx else TASK_PAGE
    return render(request, template, context, status=UNPROCESSABLE if error else 200)


@require_GET
def project_audit(request: HttpRequest, project_pk: int) -> HttpResponse:
    """Newest first; admins only (a member with another role is told so: 403)."""
    try:
        project = audit_project_get_for_user(user=request.user, project_id=project_pk)  # 404 outside the project
    except PermissionRefused:
        context = {"project": membership_get(user=request.user, project_id=project_pk).project,
                   "refused": "Only the project's admins can read its whole audit trail. Each task's own history is on its page."}
        response = render(request, PROJECT_PAGE, context, status=403)
        response[REFUSAL_HEADER] = "1"  # the page says why (see core.views)
        return response
    asked = _asked(request)
    filters, error = _filters(project_pk, asked)
    rows = audit_timeline(project_id=project_pk, newest_first=True, reader=request.user, **filters.as_kwargs())
    context = {"project": project, **_form(reverse("project-audit", args=[project_pk]), project_pk, asked, error)}
    if not error:
        context.update(_page(request, rows, asked))
    template = f"{PROJECT_PAGE}#audit-results" if request.htmx else PROJECT_PAGE
    return render(request, template, context, status=UNPROCESSABLE if error else 200)
