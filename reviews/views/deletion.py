"""Deleting a task or a world: GET asks first, on a page of its own that says what goes with
it (or why it cannot go); POST deletes and returns to the project page with a message."""

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.selectors import membership_for
from authoring.selectors import env_task_get_for_user, world_get_for_user
from core.exceptions import ApplicationError, PermissionRefused
from core.views import render_with_error
from reviews import selectors, services

TEMPLATE = "reviews/delete_confirm.html"
CANNOT = PermissionRefused("Your role in this project cannot delete tasks or worlds: authors and admins can.")


@dataclass(frozen=True)
class Deletable:
    kind: str
    editor: str  # the URL name of its page
    deletion: Callable  # obj → selectors.Deletion
    delete: Callable  # (obj, user) → its title
    with_it: str  # what the message says went with it


TASK = Deletable("task", "task-editor", selectors.env_task_deletion,
                 lambda env_task, user: services.env_task_delete(env_task=env_task, user=user), "with its trials and rubric versions")
WORLD = Deletable("world", "world-editor", selectors.world_deletion,
                  lambda world, user: services.world_delete(world=world, user=user), "with its documents and sandboxes")


def _ask_or_delete(request: HttpRequest, what: Deletable, obj) -> HttpResponse:
    def confirm(error: ApplicationError | None, deletion) -> HttpResponse:
        context = {"kind": what.kind, "obj": obj, "project": obj.project, "back": reverse(what.editor, args=[obj.pk]),
                   "action": request.path, "goes": deletion.goes, "error": error.message if error else ""}
        return render_with_error(request, TEMPLATE, context, error)

    if request.method == "GET":
        deletion = what.deletion(obj)
        membership = membership_for(user=request.user, project_id=obj.project_id)
        if membership is None or not membership.can_author:
            return confirm(CANNOT, deletion)
        return confirm(ApplicationError(deletion.refusal) if deletion.refusal else None, deletion)
    try:
        title = what.delete(obj, request.user)
    except ApplicationError as error:
        return confirm(error, what.deletion(obj))
    messages.success(request, f"The {what.kind} “{title}” was deleted, {what.with_it}.")
    return redirect("project-detail", pk=obj.project_id)


@require_http_methods(["GET", "POST"])
def task_delete(request: HttpRequest, pk: int) -> HttpResponse:
    return _ask_or_delete(request, TASK, env_task_get_for_user(user=request.user, pk=pk))


@require_http_methods(["GET", "POST"])
def world_delete(request: HttpRequest, pk: int) -> HttpResponse:
    return _ask_or_delete(request, WORLD, world_get_for_user(user=request.user, pk=pk))
