"""Drive: the folder tree, the files of one folder and a viewer rendered by the same
preview the document editor uses (sanitized), plus downloads of the real files."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from authoring.models import DocumentKind
from authoring.rendering import preview_html, render_file
from authoring.selectors import document_list_for_user
from core.exceptions import ApplicationError
from core.files import attachment_response
from core.views import UNPROCESSABLE
from workspace.forms import FileEditForm, FileUploadForm
from workspace.tools import Item, Workspace
from workspace.tools.files import FORMAT_HELP, WRITABLE_FORMATS
from workspace.views.common import OVERLAYS, Scope, anchor, render_screen, scope_get

TEMPLATE = "workspace/replica_drive.html"
ERROR_TEMPLATE = "workspace/replica_download_error.html"
FORMATS = {
    "docx": ("DOC", "Word document"), "xlsx": ("XLS", "Spreadsheet"), "pptx": ("PPT", "Slides"),
    "pdf": ("PDF", "PDF"), "md": ("MD", "Markdown"), "csv": ("CSV", "CSV table"),
}


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: n + 1]) for n in range(len(parts))]


def _size(item: Item) -> str:
    """How big the file is in the unit its kind is read in (from the content conventions)."""
    lines = item.content.splitlines()
    if item.format == "xlsx":
        n, unit = sum(1 for line in lines if line.startswith("## Sheet:")), "sheet"
    elif item.format == "pptx":
        n, unit = sum(1 for line in lines if line.startswith("## ")), "slide"
    elif item.format == "csv":
        n, unit = max(sum(1 for line in lines if line.strip()) - 1, 0), "row"
    else:
        n, unit = sum(1 for word in item.content.split() if any(ch.isalnum() for ch in word)), "word"  # markup is not a word
    return f"{n:,} {unit}{'s' if n != 1 else ''}"


def _entry(item: Item, change: str) -> dict:
    label, description = FORMATS.get(item.format, (item.format.upper() or "FILE", item.format or "File"))
    return {"path": item.path, "name": item.name, "format": item.format, "label": label, "type": description,
            "size": _size(item), "change": change, "anchor": anchor(item.path)}


def _tree(ws: Workspace, deleted: list[Item], folder: str) -> tuple[list[dict], set[str]]:
    """Every folder (parents first), with the folders holding a change marked."""
    changed = {parent for item in ws.files() if item.change for parent in _parents(item.path)}
    changed |= {parent for item in deleted for parent in _parents(item.path)}
    folders = set(ws.folders()) | {parent for item in deleted for parent in _parents(item.path)}
    rows = [{"path": f, "name": f.rpartition("/")[2], "depth": f.count("/") + 1, "changed": f in changed,
             "active": f == folder} for f in sorted(folders, key=str.lower)]
    return rows, folders


@require_GET
def drive(request: HttpRequest, scope: str, pk: int) -> HttpResponse:
    return drive_screen(request, scope_get(request, scope, pk), request.GET)


def drive_screen(request: HttpRequest, s: Scope, params, *, status: int = 200, upload_form=None, edit_form=None, error: str = "",
                 notice: str = "") -> HttpResponse:
    """The folder tree, a folder and a file as `params` asks for them; in a sandbox, with the
    upload form, and the editor of a text file when params has "edit"."""
    ws = s.workspace
    path = params.get("path", "")
    folder = params.get("folder", "").strip("/")
    deleted = [ws.world_item(p) for p in ws.deleted_paths if ws.world_item(p).kind == DocumentKind.FILE]
    selected = ws.get(path, DocumentKind.FILE) if path else None
    selected_change = selected.change if selected else ""
    if selected is None and path:
        selected = next((d for d in deleted if d.path == path), None)
        selected_change = "deleted" if selected else ""
    if selected is not None and "folder" not in params:
        folder = selected.folder
    tree, folders = _tree(ws, deleted, folder)
    missing_folder = folder if folder and folder not in folders else ""
    if missing_folder:
        folder = ""
    show_original = bool(params.get("original")) and selected_change == "modified"
    shown = ws.world_item(selected.path) if show_original else selected
    download_pk = None
    if selected is not None and not selected_change:  # the world's own file: its existing download route
        download_pk = (
            document_list_for_user(user=request.user, world_id=s.world.pk).filter(path=selected.path).values_list("pk", flat=True).first()
        )
    prefix = f"{folder}/" if folder else ""
    files = [_entry(i, i.change) for i in ws.files(folder, recursive=False)]
    files += [_entry(d, "deleted") for d in deleted if d.folder == folder]
    files.sort(key=lambda f: f["name"].lower())
    writable = s.is_sandbox and s.can_author
    editable = writable and selected is not None and selected_change != "deleted" and selected.format in WRITABLE_FORMATS
    editing = editable and (edit_form is not None or bool(params.get("edit")))
    if editing:
        edit_form = edit_form or FileEditForm(initial={"content": selected.content})
        edit_form.fields["content"].help_text = FORMAT_HELP.get(selected.format, "")  # the conventions of this file's format
    else:
        edit_form = None
    context = {
        "scope": s, "app": "drive", "folder": folder,
        "breadcrumbs": [{"path": p, "name": p.rpartition("/")[2]} for p in _parents(f"{folder}/x")] if folder else [],
        "subfolders": [t for t in tree if t["path"].startswith(prefix) and t["depth"] == prefix.count("/") + 1],
        "tree": tree, "files": files, "file_total": len(ws.files()), "missing_folder": missing_folder,
        "path": path, "selected": selected and _entry(selected, selected_change), "show_original": show_original,
        "preview": preview_html(shown.kind, shown.format, shown.content, shown.metadata) if shown and not editing else "",
        "download_pk": download_pk,
        "writable": writable, "editable": editable, "error": error, "notice": notice,
        "upload_form": (upload_form or FileUploadForm(initial={"folder": folder})) if writable else None,
        "edit_form": edit_form,
    }
    return render_screen(request, TEMPLATE, context, partials=("replica-drive", "replica-files", "replica-viewer"), status=status)


@require_GET
def overlay_file_download(request: HttpRequest, pk: int) -> HttpResponse:
    """A file as the overlay holds it, rendered as its real format: always an attachment."""
    s = scope_get(request, OVERLAYS, pk)
    item = s.workspace.get(request.GET.get("path", ""), DocumentKind.FILE)
    if item is None:
        return render(request, ERROR_TEMPLATE, {"scope": s, "error": "There is no such file in this workspace."}, status=404)
    try:
        rendered = render_file(item.kind, item.format, item.content, item.metadata, path=item.path)
    except ApplicationError as error:
        return render(request, ERROR_TEMPLATE, {"scope": s, "error": error.message, "path": item.path}, status=UNPROCESSABLE)
    return attachment_response(rendered.data, filename=rendered.filename, content_type=rendered.content_type)
