"""Reads with access rules for overlays, and an overlay's changes as a diff against its world."""

import difflib
from dataclasses import dataclass

from django.shortcuts import get_object_or_404

from accounts.models import User
from accounts.selectors import project_list_for_user
from authoring.models import Document, DocumentKind, TaskInputFile
from workspace.models import Overlay, OverlayAction, OverlayEntry

HEADER_ORDER = ("subject", "from", "to", "cc", "bcc", "date", "channel", "start", "end", "location", "attendees", "thread", "attachments")


@dataclass(frozen=True)
class Change:
    path: str
    kind: str
    format: str
    action: str  # added | modified | deleted
    before: str  # the world's item as text ("" when added)
    after: str  # the overlay's item as text ("" when deleted)
    diff: str  # unified diff of before → after


def overlay_list_for_user(*, user: User, world_id: int | None = None):
    qs = Overlay.objects.filter(world__project__in=project_list_for_user(user=user)).select_related("world", "world__project")
    return qs.filter(world_id=world_id) if world_id is not None else qs


def overlay_get_for_user(*, user: User, pk: int) -> Overlay:
    """The overlay, if the user is a member of its world's project; otherwise a 404."""
    return get_object_or_404(overlay_list_for_user(user=user), pk=pk)


def item_text(*, kind: str, content: str, metadata: dict) -> str:
    """A data-room item as comparable text: a file's content; for an email, chat message
    or event its headers (one per line, in a fixed order) then its body."""
    if kind == DocumentKind.FILE:
        return content or ""
    keys = [k for k in HEADER_ORDER if metadata.get(k)] + sorted(k for k in metadata if k not in HEADER_ORDER and metadata[k])
    headers = "\n".join(f"{key.capitalize()}: {_header(metadata[key])}" for key in keys)
    return f"{headers}\n\n{content or ''}"


def _header(value: object) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), f"world/{path}", f"overlay/{path}", lineterm="", n=3)
    return "\n".join(lines)


@dataclass(frozen=True)
class _Original:
    kind: str
    format: str
    content: str
    metadata: dict


def overlay_diff(*, overlay: Overlay, env_task_id: int | None = None) -> list[Change]:
    """The overlay's final state against what it started from, one Change per path that
    differs, in the order the changes were first made: its world, with the task's input
    files laid over it for a rollout's overlay (`env_task_id`: a task file the agent edited
    is modified, one it deleted is deleted). Two or three queries whatever the sizes."""
    entries = list(OverlayEntry.objects.filter(overlay_id=overlay.pk).order_by("id"))
    paths = [e.path for e in entries]
    documents = Document.objects.filter(world_id=overlay.world_id, path__in=paths)
    originals = {
        path: _Original(kind, fmt, content, metadata if isinstance(metadata, dict) else {})
        for path, kind, fmt, content, metadata in documents.values_list("path", "kind", "format", "content", "metadata")
    }
    if env_task_id is not None:
        task_files = TaskInputFile.objects.filter(env_task_id=env_task_id, path__in=paths)
        for path, fmt, content in task_files.values_list("path", "format", "content"):
            originals[path] = _Original(DocumentKind.FILE, fmt, content, {})
    changes: list[Change] = []
    for entry in entries:
        original = originals.get(entry.path)
        before = item_text(kind=original.kind, content=original.content, metadata=original.metadata) if original else ""
        if entry.action == OverlayAction.DELETE:
            if original is None:
                continue
            action, after = "deleted", ""
        else:
            after = item_text(kind=entry.kind, content=entry.content, metadata=entry.metadata)
            if original is not None and before == after and (original.kind, original.format) == (entry.kind, entry.format):
                continue
            action = "modified" if original is not None else "added"
        changes.append(Change(path=entry.path, kind=entry.kind, format=entry.format, action=action, before=before, after=after,
                              diff=_diff(entry.path, before, after)))
    return changes
