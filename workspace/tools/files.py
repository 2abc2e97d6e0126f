"""Drive: list, search, read, write and delete data-room files."""

import difflib
from functools import lru_cache
from pathlib import PurePosixPath
from types import SimpleNamespace

from authoring.models import DocumentKind
from authoring.rendering import parse_content
from authoring.rendering.base import RenderError
from workspace.services import overlay_entry_delete, overlay_entry_upsert

from .base import OFFSET_ARG, PAGE_ARG, ToolError, page_into, paged, require_writable, snippet, text_arg, to_json, tool
from .filetext import file_text
from .paths import check_path
from .world import Item, Workspace

WRITABLE_FORMATS = ("md", "csv", "docx", "xlsx", "pptx")
MAX_WRITE_CHARS = 200_000
MAX_HITS = 20

FORMAT_HELP = {
    "md": ".md and .docx take Markdown: # headings, paragraphs, '- ' bullets, '1. ' numbered items, pipe tables, **bold**, *italic*.",
    "csv": ".csv takes CSV text (RFC 4180: quote a field holding a comma, quote or line break).",
    "xlsx": (".xlsx takes one '## Sheet: <name>' heading per sheet, each followed by a pipe table whose header row is an empty "
             "cell then the column letters and whose first column is the row number; a cell starting with = is a formula:\n"
             "## Sheet: Summary\n|   | A | B |\n|---|---|---|\n| 1 | Item | Amount |\n| 2 | Fees | 1200 |\n| 3 | Total | =SUM(B2:B2) |"),
    "pptx": ".pptx takes one '## <slide title>' heading per slide, '- ' bullets under it, and optionally a paragraph starting "
            "'Notes:' with the speaker notes.",
}
FORMAT_HELP["docx"] = FORMAT_HELP["md"]


def not_found(ws: Workspace, path: str, kind: str, lead: str, hint: str) -> ToolError:
    """'<lead> <path>.' with the closest existing ids of that kind, and what to call instead."""
    close = difflib.get_close_matches(path, ws.paths(kind), n=3, cutoff=0.6)
    maybe = f" Did you mean: {', '.join(repr(c) for c in close)}?" if close else ""
    return ToolError(f"{lead} {path!r}.{maybe} {hint}")


def get_file(ws: Workspace, path: object) -> Item:
    path = check_path(path)
    item = ws.get(path, DocumentKind.FILE)
    if item is None:
        raise not_found(ws, path, DocumentKind.FILE, "No file at", "Use list_files or search_files to find files.")
    return item


def _folder(ws: Workspace, folder: object) -> str:
    folder = check_path(folder, what="folder", allow_root=True)
    if folder and folder not in ws.folders():
        top = sorted({f.split("/")[0] for f in ws.folders()})
        raise ToolError(
            f"No folder {folder!r}. Top-level folders: {', '.join(top) or '(none)'}. Call list_files with folder=\"\" to see the root."
        )
    return folder


@tool(
    "list_files",
    "List the data room's files and folders (Drive). Without a folder, lists the top level. Each file shows its path "
    "(the id to pass to read_file), format and size in characters.",
    {
        "folder": text_arg('A folder path such as "Deal" or "Deal/Drafts"; "" for the top level.'),
        "recursive": {"type": "boolean", "description": "Also list files in every subfolder.", "default": False},
        "offset": OFFSET_ARG,
    },
)
def list_files(ws: Workspace, folder: str = "", recursive: bool = False, offset: int = 0) -> str:
    folder = _folder(ws, folder)
    files = ws.files(folder, recursive=recursive)
    prefix = f"{folder}/" if folder else ""
    depth = folder.count("/") + 1 if folder else 0
    subfolders = [] if recursive else [f for f in ws.folders() if f.startswith(prefix) and f.count("/") == depth]
    listing = {"folder": folder or "/", "subfolders": subfolders, "total_files": len(files), "offset": offset}
    again = f"list_files with folder={to_json(folder)}" + (", recursive=true" if recursive else "")
    return to_json(page_into(listing, "files", [{"path": f.path, "format": f.format, "chars": len(f.content)} for f in files],
                             offset=offset, limit=len(files), again=again))


def searchable_text(item: Item) -> str:
    """The text a search looks in: read_file's text (an xlsx's computed values such as
    "10,000,000", which its stored source holds only as =SUM(B2:B3); a deck's slides), laid
    out once per content (a search reads every file of the world)."""
    if item.format not in ("xlsx", "pptx"):
        return item.content or ""
    return _laid_out(item.format, item.content or "")


@lru_cache(maxsize=64)  # a world's sheets and decks, kept per process; keyed by their content
def _laid_out(format: str, content: str) -> str:
    return file_text(SimpleNamespace(format=format, content=content))


@tool(
    "search_files",
    "Search files by name and (by default) by content, case-insensitively: the text read_file shows (a spreadsheet's "
    "computed values and formulas too). Every word of the query must appear. Returns up to 20 matching paths with a "
    "snippet around the first match.",
    {
        "query": text_arg("Words to look for, e.g. \"change of control\".", min_length=1, max_length=200),
        "in_content": {"type": "boolean", "description": "Search inside the files too, not only their names.", "default": True},
        "offset": OFFSET_ARG,
    },
    required=("query",),
)
def search_files(ws: Workspace, query: str, in_content: bool = True, offset: int = 0) -> str:
    words = query.lower().split()
    if not words:
        raise ToolError("The query is blank; give one or more words to look for.")
    hits = []
    for item in ws.files():
        if all(w in item.path.lower() for w in words):
            hits.append((0, item.path, "name", snippet(item.content, words[0])))
        elif in_content:
            text = searchable_text(item)  # what read_file shows: a sheet's computed values too
            lowered = text.lower()
            if all(w in lowered for w in words):
                phrase = query.strip() if query.strip().lower() in lowered else words[0]
                hits.append((1, item.path, "content", snippet(text, phrase)))
    found = [{"path": p, "matched": m, "snippet": s} for _, p, m, s in sorted(hits)]
    result = {"query": query, "matches": len(hits), "offset": offset}
    again = f"search_files with query={to_json(query)}" + ("" if in_content else ", in_content=false")
    return to_json(page_into(result, "results", found, offset=offset, limit=MAX_HITS, again=again))


@tool(
    "read_file",
    "Read one file as text: docx, md and pdf as Markdown; xlsx as a table per sheet with every cell's value, plus each "
    "formula cell's computed value and formula; pptx as slides with titles, bullets and speaker notes; csv as text. "
    "Long files come in pages of about 6,000 characters: the result says which page it is and how to get the next.",
    {"path": text_arg("The file's path, e.g. \"Deal/Letter of intent.docx\" (as list_files shows it).", min_length=1), "page": PAGE_ARG},
    required=("path",),
)
def read_file(ws: Workspace, path: str, page: int = 1) -> str:
    item = get_file(ws, path)
    return paged(file_text(item), page=page, header=f"File: {item.path} ({item.format})", again=f"read_file with path={to_json(item.path)}")


def _format_of(path: str) -> str:
    extension = PurePosixPath(path).suffix.lstrip(".").lower()
    if extension not in WRITABLE_FORMATS:
        raise ToolError(f"Cannot write {path!r}: the name must end in one of {', '.join('.' + f for f in WRITABLE_FORMATS)}.")
    return extension


@tool(
    "write_file",
    "Create a file, or replace a file's whole content, in your workspace (the original data room is not changed). "
    "Content conventions by extension: " + " ".join(FORMAT_HELP[f] for f in ("md", "csv", "xlsx", "pptx")),
    {
        "path": text_arg("Where to save it, e.g. \"Work/Memo.docx\"; the extension sets the format.", min_length=1),
        "content": text_arg("The file's full content in the conventions above.", max_length=MAX_WRITE_CHARS),
    },
    required=("path", "content"),
    writes=True,
)
def write_file(ws: Workspace, path: str, content: str) -> str:
    overlay = require_writable(ws)
    path = check_path(path)
    fmt = _format_of(path)
    existing = ws.get(path)
    if existing is not None and existing.kind != DocumentKind.FILE:
        raise ToolError(
            f"{path!r} is the id of {'an' if existing.kind == 'email' else 'a'} {existing.kind}, not a file; choose another path."
        )
    if existing is not None and existing.format != fmt:
        raise ToolError(f"{path!r} is a {existing.format} file; keep its format or choose another path.")
    try:
        parse_content(DocumentKind.FILE, fmt, content)
    except RenderError as exc:
        raise ToolError(f"The content is not a valid {fmt} file: {exc.message}\n{FORMAT_HELP[fmt]}") from None
    ws.record(overlay_entry_upsert(overlay=overlay, path=path, kind=DocumentKind.FILE, format=fmt, content=content, metadata={}))
    size = f"{len(content):,} character{'' if len(content) == 1 else 's'}"
    return f"{'Replaced' if existing else 'Created'} {path} ({fmt}, {size})."


@tool(
    "delete_file",
    "Delete a file from your workspace (the original data room is not changed).",
    {"path": text_arg("The file's path, as list_files shows it.", min_length=1)},
    required=("path",),
    writes=True,
)
def delete_file(ws: Workspace, path: str) -> str:
    overlay = require_writable(ws)
    item = get_file(ws, path)
    entry = overlay_entry_delete(overlay=overlay, path=item.path, original=ws.world_item(item.path))
    if entry is None:
        ws.forget(item.path)
    else:
        ws.record(entry)
    return f"Deleted {item.path}."
