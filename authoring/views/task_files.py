"""The task editor's "Input files" section: upload, download and remove the files the
agent receives with the task. htmx gets the section as it now is; a plain form is
redirected to the task editor with a message. Removing asks first: htmx with a confirm
dialog, a plain link with a confirmation page."""

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import TooManyFilesSent
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.selectors import membership_for
from authoring import selectors
from authoring.models import EnvTask
from authoring.services.task_files import task_input_file_remove, task_input_files_add
from core.exceptions import ApplicationError
from core.files import attachment_response
from core.views import render_with_error

TASK = "authoring/task_editor.html"


def input_files_context(request: HttpRequest, env_task: EnvTask) -> dict:
    """What the section shows; the task editor's context includes it."""
    return {"input_files": list(selectors.task_input_file_list_for_user(user=request.user, env_task_id=env_task.pk))}


def _section_context(request: HttpRequest, env_task: EnvTask, **extra) -> dict:
    can_author = membership_for(user=request.user, project_id=env_task.project_id).can_author
    return {"env_task": env_task, "editable": can_author and env_task.is_editable, **input_files_context(request, env_task), **extra}


def _done(request: HttpRequest, env_task: EnvTask, note: str) -> HttpResponse:
    """After a write: htmx gets the section as it now is, a plain form a redirect with the note."""
    if request.htmx:
        return render(request, f"{TASK}#input-files", _section_context(request, env_task, input_files_note=note))
    messages.success(request, note)
    return redirect("task-editor", pk=env_task.pk)


@require_POST
def task_input_files_upload(request: HttpRequest, task_pk: int) -> HttpResponse:
    env_task = selectors.env_task_get_for_user(user=request.user, pk=task_pk)
    try:
        added = task_input_files_add(env_task=env_task, user=request.user, uploaded_files=request.FILES.getlist("files"),
                                     folder=request.POST.get("folder", ""), replace=request.POST.get("replace") == "on")
    except TooManyFilesSent:
        return _refused(request, env_task, ApplicationError(f"Upload at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files at a time."))
    except ApplicationError as error:
        return _refused(request, env_task, error)
    plural = "s" if len(added) != 1 else ""
    return _done(request, env_task, f"Uploaded {len(added)} input file{plural}: {', '.join(f.path for f in added)}.")


def _refused(request: HttpRequest, env_task: EnvTask, error: ApplicationError) -> HttpResponse:
    if request.htmx:
        context = _section_context(request, env_task, input_files_error=error.message)
        return render_with_error(request, f"{TASK}#input-files", context, error)
    messages.error(request, error.message)
    return redirect("task-editor", pk=env_task.pk)


@require_http_methods(["GET", "POST"])
def task_input_file_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the confirmation page (for a browser without JS); POST: remove the file."""
    input_file = selectors.task_input_file_get_for_user(user=request.user, pk=pk)
    env_task = input_file.env_task
    if request.method == "GET":
        return render(request, "authoring/task_input_file_delete.html", {"input_file": input_file, "env_task": env_task})
    try:
        task_input_file_remove(input_file=input_file, user=request.user)
    except ApplicationError as error:
        return _refused(request, env_task, error)
    return _done(request, env_task, f"Removed the input file {input_file.path}.")


@require_GET
def task_input_file_download(request: HttpRequest, pk: int) -> HttpResponse:
    data, name = selectors.task_input_file_download(input_file=selectors.task_input_file_get_for_user(user=request.user, pk=pk))
    return attachment_response(data, filename=name, content_type="application/octet-stream")
