"""An overlay's changes against its world as readable diffs, and the sandboxes of a
world: overlays people open to try the apps, created and deleted from the world page."""

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.selectors import membership_for
from authoring.models import DocumentKind, World
from authoring.selectors import world_get_for_user
from core.exceptions import ApplicationError, PermissionRefused
from core.views import REFUSAL_HEADER, error_status, render_with_error
from workspace import services
from workspace.models import OverlayPurpose
from workspace.selectors import overlay_diff, overlay_list_for_user
from workspace.views.common import APP_KINDS, OVERLAYS, Scope, anchor, fresh, render_screen, scope_get, written

CHANGES_TEMPLATE = "workspace/overlay_changes.html"
SANDBOXES_TEMPLATE = "workspace/world_sandboxes.html"
DELETE_TEMPLATE = "workspace/sandbox_delete.html"
NOT_A_SANDBOX = "This workspace belongs to a trial run and is kept for grading; only sandboxes are deleted here."
APPS = {kind: app for app, kind in APP_KINDS.items()}
MAX_DIFF_LINES = 1_500
VERBS = {(DocumentKind.EMAIL, "added"): "Sent", (DocumentKind.CHAT, "added"): "Posted", (DocumentKind.EVENT, "added"): "Created",
         (DocumentKind.EVENT, "modified"): "Updated"}
NOUNS = {DocumentKind.FILE: "file", DocumentKind.EMAIL: "email", DocumentKind.CHAT: "chat message", DocumentKind.EVENT: "event"}


def _line_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "meta"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "context")


def _lines(change) -> tuple[list[tuple[str, str]], int]:
    """(css class, text) per line, capped; an added or deleted item is shown whole."""
    if change.action == "added":
        lines = [("add", line) for line in change.after.splitlines()]
    elif change.action == "deleted":
        lines = [("del", line) for line in change.before.splitlines()]
    else:
        lines = [(_line_class(line), line) for line in change.diff.splitlines()]
    return lines[:MAX_DIFF_LINES], max(len(lines) - MAX_DIFF_LINES, 0)


def _summary(changes: list) -> list[str]:
    """'2 files added · 1 email sent · …' in app order."""
    counts: dict[tuple[str, str], int] = {}
    for c in changes:
        counts[(c.kind, c.action)] = counts.get((c.kind, c.action), 0) + 1
    return [
        f"{n} {NOUNS[kind]}{'s' if n != 1 else ''} {VERBS.get((kind, action), action).lower()}"
        for kind in APP_KINDS.values() for action in ("added", "modified", "deleted") if (n := counts.get((kind, action), 0))
    ]


@require_GET
def overlay_changes(request: HttpRequest, pk: int) -> HttpResponse:
    return changes_screen(request, scope_get(request, OVERLAYS, pk), request.GET)


def changes_screen(request: HttpRequest, s: Scope, params, *, status: int = 200, error: str = "", notice: str = "") -> HttpResponse:
    changes = overlay_diff(overlay=s.overlay)
    app = params.get("app") if params.get("app") in APP_KINDS else ""
    by_app = {a: sum(1 for c in changes if APPS[c.kind] == a) for a in APP_KINDS}
    rows = []
    for change in changes:
        if app and APPS[change.kind] != app:
            continue
        lines, hidden = _lines(change)
        chat = s.workspace.chat_message(change.path) if change.kind == DocumentKind.CHAT else None
        email = s.workspace.email(change.path) if change.kind == DocumentKind.EMAIL else None
        event = s.workspace.event(change.path) if change.kind == DocumentKind.EVENT else None
        if change.action == "deleted":  # the world's item, which the sandbox hides
            original = s.workspace.world_item(change.path)
            title = (original.metadata.get("subject") or change.path) if original and original.kind != DocumentKind.FILE else change.path
        else:
            title = (email.subject or "(no subject)" if email else f"Message in #{chat.channel.lstrip('#')}" if chat
                     else event.subject or "(no title)" if event else change.path)
        rows.append({"change": change, "app": APPS[change.kind], "noun": NOUNS[change.kind], "lines": lines, "hidden_lines": hidden,
                     "channel": chat.channel.lstrip("#") if chat else "", "title": title,
                     "verb": VERBS.get((change.kind, change.action), change.action.capitalize()), "anchor": anchor(change.path)})
    filters = [("", f"All {len(changes)}"), *((a, f"{a.capitalize()} {n}") for a, n in by_app.items() if n or a == app)]
    context = {"scope": s, "app": "changes", "filter": app, "filters": filters, "changes_url": reverse("overlay-changes", args=[s.pk]),
               "rows": rows, "summary": _summary(changes), "total": len(changes), "by_app": by_app,
               "discardable": s.is_sandbox and s.can_author, "error": error, "notice": notice}
    return render_screen(request, CHANGES_TEMPLATE, context, partials=("replica-changes",), status=status)


@require_POST
def overlay_entry_discard(request: HttpRequest, pk: int) -> HttpResponse:
    """Discard one change: the world's version of that path shows again."""
    s = scope_get(request, OVERLAYS, pk)
    path, app = request.POST.get("path", ""), request.POST.get("app", "")
    params = {"app": app} if app in APP_KINDS else {}
    url = reverse("overlay-changes", args=[pk]) + (f"?app={app}" if params else "")
    try:
        services.overlay_entry_discard(overlay=s.overlay, user=request.user, path=path)
    except ApplicationError as error:
        response = changes_screen(request, s, params, status=error_status(error), error=error.message)
        if isinstance(error, PermissionRefused):
            response[REFUSAL_HEADER] = "1"
        return response
    done = f"Discarded the change to {path}: the world's version shows again."
    if request.htmx:
        return written(changes_screen(request, fresh(s), params, notice=done), url=url)
    messages.success(request, done)
    return redirect(url)


def _sandboxes_context(request: HttpRequest, world: World, **extra) -> dict:
    membership = membership_for(user=request.user, project_id=world.project_id)
    sandboxes = (overlay_list_for_user(user=request.user, world_id=world.pk).filter(purpose=OverlayPurpose.SANDBOX)
                 .select_related("created_by").annotate(entry_count=Count("entries")))
    return {"world": world, "project": world.project, "sandboxes": sandboxes, "can_author": bool(membership and membership.can_author),
            **extra}


def _sandboxes_response(request: HttpRequest, world: World, error: ApplicationError | None = None, **extra) -> HttpResponse:
    context = _sandboxes_context(request, world, error=error.message if error else None, **extra)
    template = SANDBOXES_TEMPLATE + ("#replica-sandboxes" if request.htmx and not request.htmx.history_restore_request else "")
    return render_with_error(request, template, context, error)


@require_http_methods(["GET", "POST"])
def world_sandboxes(request: HttpRequest, pk: int) -> HttpResponse:
    """The world's sandboxes (the world page loads this as a fragment); a POST creates one."""
    world = world_get_for_user(user=request.user, pk=pk)
    if request.method == "GET":
        return _sandboxes_response(request, world)
    label = request.POST.get("label", "")
    try:
        overlay = services.overlay_create(world=world, user=request.user, label=label, purpose=OverlayPurpose.SANDBOX)
    except ApplicationError as error:
        return _sandboxes_response(request, world, error, label=label)
    if not request.htmx:
        return redirect("replica-drive", OVERLAYS, overlay.pk)
    return _sandboxes_response(request, world, created=overlay.pk)


@require_http_methods(["GET", "POST"])
def sandbox_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks first (a page of its own, so it works without JavaScript); POST deletes."""
    s = scope_get(request, OVERLAYS, pk)
    overlay, world = s.overlay, s.world
    if request.method == "GET":
        refusal = None
        if not s.is_sandbox:
            refusal = ApplicationError(NOT_A_SANDBOX)
        elif not s.can_author:
            refusal = PermissionRefused("Your role in this project cannot delete sandboxes.")
        back = request.GET.get("next", "")
        context = {"scope": s, "app": "", "error": refusal.message if refusal else "", "change_total": s.change_total,
                   "sandbox_name": s.name[:1].lower() + s.name[1:],
                   "back": back if url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}) and back.startswith("/")
                   else s.drive_url}
        return render_with_error(request, DELETE_TEMPLATE, context, refusal)
    try:
        if not s.is_sandbox:
            raise ApplicationError(NOT_A_SANDBOX)
        services.sandbox_delete(overlay=overlay, user=request.user)
    except ApplicationError as error:
        if request.htmx:
            return _sandboxes_response(request, world, error)
        messages.error(request, error.message)
        return redirect("replica-drive", OVERLAYS, overlay.pk)
    if request.htmx:
        return _sandboxes_response(request, world)
    messages.success(request, f"{s.name} was deleted. The world was never changed by it.")
    return redirect("world-editor", pk=world.pk)
