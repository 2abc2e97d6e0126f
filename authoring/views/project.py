"""The project page: its worlds, its tasks a page at a time (sorted, filtered, searched),
a New task form, and the project's model usage."""

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.models import Membership
from accounts.selectors import membership_get
from authoring import selectors, services
from authoring.forms import WorldForm
from authoring.models import EnvTaskStatus
from core.exceptions import ApplicationError
from core.listing import ListSpec, list_page
from core.views import render_with_error
from llm.selectors import usage_totals_by_project

TEMPLATE = "authoring/project_detail.html"

# Every ordering here has an index (authoring/migrations/0006_list_indexes.py).
TASKS = ListSpec(
    sorts={
        "updated": ("updated_at", "id"),
        "title": ("title", "id"),
        "status": ("status", "updated_at", "id"),
    },
    default_sort="-updated",
    filters={"status": ("status", EnvTaskStatus.values)},
    search=("title",),
    per_page=50,
)


class ProjectTaskCreateForm(forms.Form):
    world = forms.IntegerField(error_messages={"required": "Choose the world the task is set in."})
    title = forms.CharField(max_length=200, error_messages={"required": "Give the task a title."})


def _form_error(form: forms.Form) -> ApplicationError:
    field, messages = next(iter(form.errors.items()))
    label = "" if field == "__all__" else f"{form.fields[field].label or field.replace('_', ' ').capitalize()}: "
    return ApplicationError(f"{label}{messages[0]}")


def _project_context(request: HttpRequest, membership: Membership, **extra) -> dict:
    project_id = membership.project_id
    rows = selectors.env_task_rows_for_user(user=request.user, project_id=project_id, related=("world", "created_by"))
    tasks = list_page(request, rows, TASKS)
    return {
        "project": membership.project,
        "membership": membership,
        "worlds": selectors.world_list_for_user(user=request.user, project_id=project_id),
        "tasks": tasks,
        "env_tasks": tasks.rows,
        "statuses": EnvTaskStatus.choices,
        "members": membership.project.memberships.select_related("user").order_by("role", "user__username"),
        "usage": usage_totals_by_project(project_ids=[project_id]) if membership.can_export else [],
        **extra,
    }


def project_detail(request: HttpRequest, pk: int) -> HttpResponse:
    membership = membership_get(user=request.user, project_id=pk)
    return render(request, TEMPLATE, _project_context(request, membership))


@require_POST
def world_create(request: HttpRequest, project_pk: int) -> HttpResponse:
    membership = membership_get(user=request.user, project_id=project_pk)
    form = WorldForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        world = services.world_create(
            project_id=project_pk, user=request.user, title=form.cleaned_data["title"], outline=form.cleaned_data["outline"]
        )
    except ApplicationError as error:
        request.method = "GET"
        return render_with_error(request, TEMPLATE, _project_context(request, membership, world_error=error.message), error)
    return redirect("world-editor", pk=world.pk)


@require_POST
def project_task_create(request: HttpRequest, project_pk: int) -> HttpResponse:
    """New task from the project page: the author picks the world it is set in."""
    membership = membership_get(user=request.user, project_id=project_pk)
    form = ProjectTaskCreateForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        world = selectors.world_list_for_user(user=request.user, project_id=project_pk).filter(pk=form.cleaned_data["world"]).first()
        if world is None:
            raise ApplicationError("Choose one of this project's worlds for the task.")
        env_task = services.env_task_create(world=world, user=request.user, title=form.cleaned_data["title"])
    except ApplicationError as error:
        request.method = "GET"
        context = _project_context(request, membership, task_error=error.message, task_title=request.POST.get("title", ""))
        return render_with_error(request, TEMPLATE, context, error)
    return redirect("task-editor", pk=env_task.pk)
