"""Shared types of the rendering package: the error, the rendered file and the world items."""

import hashlib
from dataclasses import dataclass, field

from core.exceptions import ApplicationError


class RenderError(ApplicationError):
    """A document's content or metadata does not follow docs/content-format.md.

    The message names the line (or the metadata field) and says what was expected, so
    the expert can fix it by hand.
    """


@dataclass(frozen=True)
class RenderedFile:
    filename: str
    content_type: str
    data: bytes


@dataclass(frozen=True)
class WorldItem:
    """One email, chat message or event of a world, as plain values.

    `path` is the document's data-room path: unique within its world and kept by export
    and import, so every id derived from (world_key, path) is stable across both.
    """

    path: str
    content: str
    metadata: dict = field(default_factory=dict)


EmailItem = WorldItem
ChatItem = WorldItem
EventItem = WorldItem

# Files carry no clock of their own: a fixed creation time keeps renders byte-identical.
FIXED_CREATED = (2024, 1, 1, 0, 0, 0)


def stable_hex(*parts: str, length: int = 32) -> str:
    """A deterministic hex digest of the parts (never a random or time-based id)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    return digest[:length]


def require_kind_format(kind: str, format: str) -> str:
    """The renderer key for a kind/format pair: docx, xlsx, pptx, pdf, md, csv, email, chat, event."""
    if kind in ("email", "chat", "event"):
        return kind
    if kind == "file" and format in ("docx", "xlsx", "pptx", "pdf", "md", "csv"):
        return format
    raise RenderError(f"Cannot render a document of kind {kind!r} with format {format!r}: "
                      "files need one of docx, xlsx, pptx, pdf, md, csv; emails, chat messages and events need no format.")
