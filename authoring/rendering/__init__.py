"""Document content (docs/content-format.md) → structured form, real files and previews.

Pure functions over plain values: no database, no Django models. Callers pass a
document's kind, format, content and metadata; world-level renders take WorldItems and a
`world_key` (anything stable across export and import, e.g. the world's uuid or "" ) from
which Message-IDs, event UIDs and chat ids are derived, so the same world always renders
to the same bytes.
"""

from .base import ChatItem, EmailItem, EventItem, RenderedFile, RenderError, WorldItem, require_kind_format
from .chat import chat_group_messages, render_chat, render_chat_message
from .events import render_event, render_ics
from .headers import chat_metadata, email_metadata, event_metadata, parse_chat, parse_email, parse_event
from .mail import render_eml, render_mbox
from .markdown import blocks_to_markdown, parse_blocks
from .preview import preview_html
from .schemas import schema_for
from .sheets import parse_sheets, sheets_to_content
from .slides import parse_slides, render_pptx, slides_to_content
from .tabular import csv_to_content, parse_csv, render_csv
from .workbook import Workbook

__all__ = [
    "ChatItem", "EmailItem", "EventItem", "RenderError", "RenderedFile", "WorldItem",
    "chat_group_messages", "content_schema", "parse_content", "preview_html", "render_chat", "render_file",
    "render_ics", "render_mbox", "structured_to_content", "structured_to_metadata",
]

CONTENT_TYPES = {
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "pdf": "application/pdf",
    "md": "text/markdown; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
    "email": "message/rfc822",
    "chat": "application/json",
    "event": "text/calendar; charset=utf-8",
}
EXTENSIONS = {"email": "eml", "chat": "json", "event": "ics"}


def parse_content(kind: str, format: str, content: str, metadata: dict | None = None) -> dict:
    """The structured form of a document (the shape content_schema describes). Raises
    RenderError, naming the line or metadata field, when the content is not valid."""
    key = require_kind_format(kind, format)
    metadata = metadata or {}
    if key in ("docx", "md", "pdf"):
        return parse_blocks(content)
    if key == "xlsx":
        structured, where = parse_sheets(content)
        Workbook(structured, where)  # computes every formula: a bad reference or function fails here
        return structured
    if key == "pptx":
        return parse_slides(content)
    if key == "csv":
        return parse_csv(content)
    return {"email": parse_email, "chat": parse_chat, "event": parse_event}[key](content, metadata)


def structured_to_content(kind: str, format: str, structured: dict) -> str:
    """Content in the documented conventions; parse_content gives `structured` back.
    For emails, chat messages and events this is the body; the headers come from
    structured_to_metadata."""
    key = require_kind_format(kind, format)
    if not isinstance(structured, dict):
        raise RenderError("The drafted document must be a JSON object.")
    if key in ("docx", "md", "pdf"):
        return blocks_to_markdown(structured.get("blocks") or [])
    if key == "xlsx":
        return sheets_to_content(structured)
    if key == "pptx":
        return slides_to_content(structured)
    if key == "csv":
        return csv_to_content(structured)
    field = {"email": "body", "chat": "text", "event": "description"}[key]
    return str(structured.get(field) or "")


def structured_to_metadata(kind: str, format: str, structured: dict) -> dict:
    """The metadata fields a drafted email, chat message or event sets ({} for files).
    Merge them over the document's metadata: keys the model does not draft (thread) stay."""
    key = require_kind_format(kind, format)
    converters = {"email": email_metadata, "chat": chat_metadata, "event": event_metadata}
    return converters[key](structured) if key in converters else {}


def content_schema(kind: str, format: str) -> dict:
    """The JSON schema of what a model returns when drafting this kind/format."""
    return schema_for(kind, format)


def _filename(path: str, key: str) -> str:
    name = (path or "").replace("\\", "/").rstrip("/").rpartition("/")[2] or "document"
    extension = EXTENSIONS.get(key, key)
    return name if name.lower().endswith("." + extension) else f"{name}.{extension}"


def render_file(kind: str, format: str, content: str, metadata: dict | None = None, *, path: str, world_key: str = "") -> RenderedFile:
    """One document as the real file its format names."""
    key = require_kind_format(kind, format)
    metadata = metadata or {}
    author = str(metadata.get("author") or "")
    if key == "docx":
        from .wordfile import render_docx

        data = render_docx(parse_blocks(content)["blocks"], author=author)
    elif key == "pdf":
        from .pdffile import render_pdf  # fpdf2 (and Pillow) load only when a PDF is made

        data = render_pdf(parse_blocks(content)["blocks"])
    elif key == "md":
        data = (content or "").encode()
    elif key == "xlsx":
        structured, where = parse_sheets(content)
        data = Workbook(structured, where).to_xlsx()
    elif key == "pptx":
        data = render_pptx(parse_slides(content), author=author)
    elif key == "csv":
        data = render_csv(content)
    elif key == "email":
        data = render_eml(content, metadata, path=path, world_key=world_key)
    elif key == "chat":
        data = render_chat_message(content, metadata, path=path, world_key=world_key)
    else:
        data = render_event(content, metadata, path=path, world_key=world_key)
    return RenderedFile(filename=_filename(path, key), content_type=CONTENT_TYPES[key], data=data)
