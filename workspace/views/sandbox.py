"""A sandbox's apps answering the author: send and reply to mail, post and reply in chat,
add, edit and delete events, upload, edit and delete files. Each POST parses a form,
calls one service (the agent's own tool, behind the author's permission) and answers as
its app's screen: htmx gets the updated fragment, a plain form is redirected to the page
showing what was written. A refused write shows the form again with what was typed and
why, next to the field where a field is to blame."""

from collections.abc import Callable
from pathlib import PurePosixPath
from urllib.parse import urlencode

from django.contrib import messages
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from authoring.models import DocumentKind
from core.exceptions import ApplicationError, PermissionRefused
from core.views import REFUSAL_HEADER, error_status
from workspace import services
from workspace.forms import ChatPostForm, ChatReplyForm, EmailComposeForm, EmailReplyForm, EventForm, FileEditForm, FileUploadForm
from workspace.views.calendar import calendar_screen
from workspace.views.chat import chat_screen
from workspace.views.common import OVERLAYS, Scope, anchor, fresh, scope_get, written
from workspace.views.drive import drive_screen
from workspace.views.mail import mail_screen


def _url(base: str, params: dict, fragment: str = "") -> str:
    query = urlencode({k: v for k, v in params.items() if v})
    return base + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")


def _done(request: HttpRequest, s: Scope, screen: Callable, base: str, params: dict, message: str, *, fragment: str = "",
          **extra) -> HttpResponse:
    """After a write: htmx gets the screen as it now is (and its new address), a plain form
    a redirect to it with the message."""
    if request.htmx:  # (the message shows on the screen, as a plain form's redirect shows it on the page)
        return written(screen(request, fresh(s), params, **{"notice": message, **extra}), url=_url(base, params))
    messages.success(request, message)
    return redirect(_url(base, params, fragment))


class _FormInvalid(ApplicationError):
    """A form that did not validate: its field errors say why, so there is no message
    above it (422), and no service was asked."""

    def __init__(self) -> None:
        super().__init__("")


def _cleaned(form: Form) -> dict:
    """The form's data, or _FormInvalid: a view calls it inside the try that calls its
    service, so a form with errors is refused the same way as a write the service refuses."""
    if not form.is_valid():
        raise _FormInvalid
    return form.cleaned_data


def _refused(request: HttpRequest, s: Scope, screen: Callable, params: dict, error: ApplicationError, **forms) -> HttpResponse:
    """The screen again, the refused form bound (what was typed, its field errors) and the
    service's reason above it: 422, or 403 when the user's role may not write here."""
    response = screen(request, s, params, status=error_status(error), error=error.message, **forms)
    if isinstance(error, PermissionRefused):
        response[REFUSAL_HEADER] = "1"
    return response


def _sandbox(request: HttpRequest, pk: int) -> Scope:
    return scope_get(request, OVERLAYS, pk)  # a project the user is not in: 404


# --- mail ----------------------------------------------------------------------------------------

@require_POST
def sandbox_mail_send(request: HttpRequest, pk: int) -> HttpResponse:
    s = _sandbox(request, pk)
    form = EmailComposeForm(request.POST)
    try:
        data = _cleaned(form)
        path = services.sandbox_email_send(overlay=s.overlay, user=request.user, to=data["to"], cc=data["cc"], subject=data["subject"],
                                           body=data["body"])
        return _done(request, s, mail_screen, s.mail_url, {"id": path}, "Sent. The email is in Mail/Sent of this sandbox.")
    except ApplicationError as error:
        return _refused(request, s, mail_screen, {"compose": "1"}, error, compose_form=form)


@require_POST
def sandbox_mail_reply(request: HttpRequest, pk: int) -> HttpResponse:
    s = _sandbox(request, pk)
    email_id = request.POST.get("id", "")
    form = EmailReplyForm(request.POST)
    try:
        data = _cleaned(form)
        path = services.sandbox_email_reply(overlay=s.overlay, user=request.user, email_id=email_id, body=data["body"],
                                            reply_all=data["reply_all"])
        return _done(request, s, mail_screen, s.mail_url, {"id": path}, "Reply sent.", fragment=anchor(path))
    except ApplicationError as error:
        return _refused(request, s, mail_screen, {"id": email_id}, error, reply_form=form)


# --- chat ----------------------------------------------------------------------------------------

@require_POST
def sandbox_chat_post(request: HttpRequest, pk: int) -> HttpResponse:
    s = _sandbox(request, pk)
    channel = request.POST.get("channel", "")
    form = ChatPostForm(request.POST)
    try:
        data = _cleaned(form)
        path = services.sandbox_chat_post(overlay=s.overlay, user=request.user, channel=channel, text=data["text"])
        return _done(request, s, chat_screen, s.chat_url, {"channel": channel}, "Posted.", fragment=anchor(path))
    except ApplicationError as error:
        return _refused(request, s, chat_screen, {"channel": channel}, error, post_form=form)


@require_POST
def sandbox_chat_reply(request: HttpRequest, pk: int) -> HttpResponse:
    s = _sandbox(request, pk)
    message_id, channel = request.POST.get("id", ""), request.POST.get("channel", "")
    form = ChatReplyForm(request.POST, auto_id=f"id_{anchor(message_id)}_%s")
    try:
        data = _cleaned(form)
        path = services.sandbox_chat_reply(overlay=s.overlay, user=request.user, message_id=message_id, text=data["text"])
        return _done(request, s, chat_screen, s.chat_url, {"channel": channel}, "Replied in the thread.", fragment=anchor(path))
    except ApplicationError as error:
        return _refused(request, s, chat_screen, {"channel": channel}, error, reply_form=form, reply_to=message_id)


# --- calendar ------------------------------------------------------------------------------------

def _event_fields(data: dict) -> dict:
    return {"subject": data["subject"], "start": data["start"], "end": data["end"], "all_day": data["all_day"],
            "location": data["location"], "attendees": data["attendees"], "description": data["description"]}


@require_POST
def sandbox_event_create(request: HttpRequest, pk: int) -> HttpResponse:
    s = _sandbox(request, pk)
    form = EventForm(request.POST)
    try:
        data = _cleaned(form)
        path = services.sandbox_event_create(overlay=s.overlay, user=request.user, **_event_fields(data))
        return _done(request, s, calendar_screen, s.calendar_url, {"view": "agenda"}, "Event added.", fragment=anchor(path))
    except ApplicationError as error:
        return _refused(request, s, calendar_screen, {"new": "1"}, error, event_form=form)


@require_POST
def sandbox_event_update(request: HttpRequest, pk: int) -> HttpResponse:
    s = _sandbox(request, pk)
    event_id = request.POST.get("id", "")
    event = s.workspace.event(event_id)
    form = EventForm(request.POST, initial=EventForm.initial_for(event) if event else {})
    try:
        data = _cleaned(form)
        services.sandbox_event_update(overlay=s.overlay, user=request.user, event_id=event_id, **_event_fields(data))
        return _done(request, s, calendar_screen, s.calendar_url, {"view": "agenda"}, "Event saved.", fragment=anchor(event_id))
    except ApplicationError as error:
        return _refused(request, s, calendar_screen, {"edit": event_id}, error, event_form=form, editing=event_id)


@require_POST
def sandbox_event_delete(request: HttpRequest, pk: int) -> HttpResponse:
    s = _sandbox(request, pk)
    event_id = request.POST.get("id", "")
    try:
        services.sandbox_event_delete(overlay=s.overlay, user=request.user, event_id=event_id)
    except ApplicationError as error:
        return _refused(request, s, calendar_screen, {"view": "agenda"}, error)
    return _done(request, s, calendar_screen, s.calendar_url, {"view": "agenda"}, "Event deleted from this sandbox.")


# --- drive ---------------------------------------------------------------------------------------

def _upload_notice(name: str, outcome: services.SandboxUpload) -> str:
    notice = f"Uploaded {name}: " + (outcome.paths[0] if len(outcome.paths) == 1 else f"{len(outcome.paths)} items") + "."
    if len(outcome.paths) > 1:
        notice += " " + ", ".join(outcome.paths[:5]) + (" …" if len(outcome.paths) > 5 else "") + "."
    if outcome.left:
        notice += " Not kept: " + "; ".join(f"{left.item} ({left.reason.rstrip('.')})" for left in outcome.left[:5]) + "."
    return notice


@require_POST
def sandbox_file_upload(request: HttpRequest, pk: int) -> HttpResponse:
    """Answers with the upload's notice, on the drive open at the first file it made
    (an upload that made only mail or events: at the folder)."""
    s = _sandbox(request, pk)
    folder = request.POST.get("folder", "").strip().strip("/")
    form = FileUploadForm(request.POST, request.FILES)
    try:
        data = _cleaned(form)
        outcome = services.sandbox_file_upload(overlay=s.overlay, user=request.user, uploaded_file=data["file"], folder=data["folder"])
        notice = _upload_notice(data["file"].name, outcome)
        ws = fresh(s).workspace
        first_file = next((p for p in outcome.paths if ws.get(p, DocumentKind.FILE)), "")
        params = {"path": first_file} if first_file else {"folder": folder}
        return _done(request, s, drive_screen, s.drive_url, params, notice, notice=notice)
    except ApplicationError as error:
        return _refused(request, s, drive_screen, {"folder": folder}, error, upload_form=form)


@require_POST
def sandbox_file_edit(request: HttpRequest, pk: int) -> HttpResponse:
    s = _sandbox(request, pk)
    path = request.POST.get("path", "")
    form = FileEditForm(request.POST)
    try:
        data = _cleaned(form)
        services.sandbox_file_write(overlay=s.overlay, user=request.user, path=path, content=data["content"])
        return _done(request, s, drive_screen, s.drive_url, {"path": path}, f"Saved {path} in this sandbox.")
    except ApplicationError as error:
        return _refused(request, s, drive_screen, {"path": path, "edit": "1"}, error, edit_form=form)


@require_POST
def sandbox_file_delete(request: HttpRequest, pk: int) -> HttpResponse:
    s = _sandbox(request, pk)
    path = request.POST.get("path", "")
    try:
        services.sandbox_file_delete(overlay=s.overlay, user=request.user, path=path)
    except ApplicationError as error:
        return _refused(request, s, drive_screen, {"path": path}, error)
    folder = str(PurePosixPath(path).parent).strip(".")
    return _done(request, s, drive_screen, s.drive_url, {"folder": folder}, f"Deleted {path} from this sandbox (the world keeps it).")
