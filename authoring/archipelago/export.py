"""A world as a zip in the APEX-Agents / Archipelago layout (FORMATS.md, "World on disk").

Pure over plain values (no database): the service hands in the documents
(write_world_zip), or a frozen snapshot of the world as plain values
(write_world_snapshot_zip, what a pack build holds). The zip is deterministic: entries
in name order, fixed timestamps and modes, ids derived from (WORLD_KEY, path) unless a
document keeps the ones it was imported with, so the same world always gives the same
files. A world with a
document that cannot be rendered is not exported at all: the error names every such
document (a zip with a hole in it would give agents a world the task was not written
for).
"""

import hashlib
import json
import logging
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import BinaryIO

from authoring.rendering import WorldItem, render_chat, render_file, render_ics, render_mbox
from authoring.rendering.chat import chat_message_ids
from authoring.rendering.events import event_uids
from authoring.rendering.headers import parse_chat, parse_email, parse_event, parse_kept
from authoring.rendering.mail import email_message_ids
from core.exceptions import ApplicationError

from .layout import APPS_DATA, CHAT_DIR, FILESYSTEM, ICS, MBOX, SIDECAR, SIDECAR_VERSION, WORLD_KEY, ZIP_DATE, export_path

logger = logging.getLogger(__name__)

MAX_PROBLEMS_SHOWN = 10
FILE_METADATA_KEYS = ("author",)  # the only metadata a file's rendering reads (all that world.json version 1 kept)
DEFAULT_TARGET_SIZE = 300


@dataclass(frozen=True)
class ExportDocument:
    path: str
    kind: str
    format: str
    content: str
    metadata: dict = field(default_factory=dict)
    is_skeleton: bool = False  # no content yet: not part of the world until drafted
    brief: str = ""
    target_size: int = DEFAULT_TARGET_SIZE
    status: str = "edited"  # drafted, edited or locked (world.json keeps it; a locked document comes back locked)

    @classmethod
    def from_snapshot(cls, document: Mapping) -> "ExportDocument":
        """One document of a world snapshot: {"path", "kind", "format", "brief", "metadata",
        "target_size", "content", "status"}. A skeleton without content is not part of
        the world yet (write_world_zip refuses the export until it is drafted or deleted)."""
        content, status = str(document.get("content") or ""), str(document.get("status") or "edited")
        size = document.get("target_size")
        return cls(
            path=str(document["path"]), kind=str(document.get("kind") or "file"), format=str(document.get("format") or ""),
            content=content, metadata=dict(document.get("metadata") or {}), is_skeleton=status == "skeleton" and not content,
            brief=str(document.get("brief") or ""), target_size=DEFAULT_TARGET_SIZE if size is None else int(size), status=status,
        )


@dataclass
class _Rendered:
    problems: list[str] = field(default_factory=list)
    apps: dict[str, bytes] = field(default_factory=dict)  # zip name → bytes (mail, chat, calendar)
    ids: dict[str, dict[str, str]] = field(default_factory=lambda: {"mail": {}, "chat": {}, "calendar": {}})  # id → path


def write_world_snapshot_zip(snapshot: Mapping, *, out: BinaryIO) -> dict[str, int]:
    """write_world_zip over a frozen snapshot of a world, as plain values:
    {"id", "title", "outline", "facts": [{key, value}], "documents": [{"path", "kind",
    "format", "brief", "metadata", "target_size", "content", "status"}]} ("id" is not
    written: a world's zip is the same wherever the world lives)."""
    return write_world_zip(
        [ExportDocument.from_snapshot(d) for d in snapshot.get("documents") or []], title=str(snapshot.get("title") or ""),
        outline=str(snapshot.get("outline") or ""), facts=list(snapshot.get("facts") or []), out=out,
    )


def write_world_zip(
    documents: list[ExportDocument], *, title: str, out: BinaryIO, outline: str = "", facts: list | None = None
) -> dict[str, int]:
    """Write the world's zip to `out`; return counts per kind. Raises ApplicationError
    naming the documents that do not render (nothing useful is written then)."""
    result = _Rendered()
    for document in documents:
        if document.is_skeleton:
            result.problems.append(f"{document.path}: has no content yet (a skeleton); draft it or delete it")
    live = [d for d in documents if not d.is_skeleton]
    files = [d for d in live if d.kind == "file"]
    targets = _file_targets(files, result.problems)
    renamed = {d.path: targets[d.path] for d in files if d.path in targets and targets[d.path] != d.path}
    emails = [WorldItem(d.path, d.content, _attachments_renamed(d.metadata, renamed)) for d in live if d.kind == "email"]
    chats = [WorldItem(d.path, d.content, d.metadata) for d in live if d.kind == "chat"]
    events = [WorldItem(d.path, d.content, d.metadata) for d in live if d.kind == "event"]
    _render_mail(emails, result)
    _render_chat(chats, result)
    _render_calendar(events, result)
    with tempfile.TemporaryFile() as spool:
        placed, sources = _render_files(files, targets, spool, result.problems)
        if result.problems:
            raise ApplicationError(_problems_message(result.problems))
        items = {item.path: item for item in emails + chats + events}  # metadata as written (attachments renamed)
        by_path = {d.path: d for d in live}
        sidecar = {
            "taskwright_world": SIDECAR_VERSION,
            "title": title,
            "outline": outline,
            "facts": list(facts or []),
            "files": sources,
            **{app: {key: {"path": path, **_notes(by_path[path], items[path].metadata)} for key, path in ids.items()}
               for app, ids in result.ids.items()},
        }
        entries: dict[str, bytes | tuple[int, int] | None] = {f"{APPS_DATA}": None, f"{FILESYSTEM}": None}
        entries.update(result.apps)
        entries[SIDECAR] = (json.dumps(sidecar, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()
        entries.update({FILESYSTEM + target: span for target, span in placed.items()})
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            for name in sorted(entries):
                value = entries[name]
                if value is None:
                    archive.writestr(_info(name, directory=True), b"")
                    continue
                if isinstance(value, tuple):
                    spool.seek(value[0])
                    value = spool.read(value[1])
                archive.writestr(_info(name), value)
    return {"files": len(placed), "emails": len(emails), "chat": len(chats), "events": len(events)}


def _info(name: str, *, directory: bool = False) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.create_system = 3  # unix: the modes below mean what they say on every platform
    if directory:
        info.external_attr = (0o40755 << 16) | 0x10
        info.compress_type = zipfile.ZIP_STORED
    else:
        info.external_attr = 0o100644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _problems_message(problems: list[str]) -> str:
    shown = "; ".join(p.rstrip(". ") for p in problems[:MAX_PROBLEMS_SHOWN])
    more = f"; and {len(problems) - MAX_PROBLEMS_SHOWN} more" if len(problems) > MAX_PROBLEMS_SHOWN else ""
    count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    return f"The world cannot be exported until {count} {'is' if len(problems) == 1 else 'are'} fixed: {shown}{more}."


def _file_targets(files: list[ExportDocument], problems: list[str]) -> dict[str, str]:
    """document path → its path under filesystem/, refusing two files on one name or a
    file where another needs a folder."""
    targets: dict[str, str] = {}
    owner: dict[str, str] = {}
    for document in sorted(files, key=lambda d: d.path):
        target = export_path(document.path, document.format)
        if target.startswith("/") or "\\" in target or any(part in ("", ".", "..") for part in target.split("/")):
            # Services never store such a path; a zip entry must never point outside its folder either way.
            problems.append(f"{document.path}: is not a safe path inside the zip")
            continue
        if target in owner:
            problems.append(f"{document.path}: would be exported as filesystem/{target}, like {owner[target]}; rename one of them")
            continue
        owner[target] = document.path
        targets[document.path] = target
    for target, path in owner.items():
        parts = target.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder in owner:
                problems.append(f"{owner[folder]}: exported as filesystem/{folder}, which {path} needs as a folder; rename one of them")
    return targets


def _attachments_renamed(metadata: dict, renamed: dict[str, str]) -> dict:
    """An email's attachments name files as the zip holds them (a document at Deal/LOI
    with format docx is filesystem/Deal/LOI.docx)."""
    raw = metadata.get("attachments")
    if not renamed or not raw or not isinstance(raw, str | list):
        return metadata
    # "/Deal/LOI" (absolute, as X-Attachments writes it) names the document at Deal/LOI too.
    paths = [str(p).strip().lstrip("/") for p in (raw if isinstance(raw, list) else raw.split(",")) if str(p).strip().lstrip("/")]
    if not any(p in renamed for p in paths):
        return metadata
    return {**metadata, "attachments": ", ".join(renamed.get(p, p) for p in paths)}


def _render_files(files: list[ExportDocument], targets: dict[str, str], spool, problems: list[str]):
    """Render every file into `spool` (so memory holds one file at a time); return
    ({target: (offset, size)}, the world.json entries)."""
    placed: dict[str, tuple[int, int]] = {}
    sources: dict[str, dict] = {}
    for document in sorted(files, key=lambda d: d.path):
        target = targets.get(document.path)
        if target is None:
            continue
        try:
            data = render_file(
                document.kind, document.format, document.content, document.metadata, path=document.path, world_key=WORLD_KEY
            ).data
        except ApplicationError as exc:
            problems.append(f"{document.path}: {exc.message}")
            continue
        except Exception as exc:  # a library's failure on odd content: name the document, keep the trace in the log
            logger.exception("Rendering %s for a world export failed", document.path)
            problems.append(f"{document.path}: could not be rendered ({type(exc).__name__})")
            continue
        if problems:
            continue  # the export fails anyway: keep checking, stop writing
        offset = spool.seek(0, 2)
        spool.write(data)
        placed[target] = (offset, len(data))
        sources[target] = {
            "format": document.format,
            "sha256": hashlib.sha256(data).hexdigest(),
            "content": document.content,
            **_notes(document, document.metadata),
        }
    return placed, sources


def _notes(document: ExportDocument, metadata: dict) -> dict:
    """What world.json keeps of a document beyond its content: Taskwright's authoring notes."""
    return {"kind": document.kind, "metadata": metadata, "brief": document.brief, "target_size": document.target_size,
            "status": document.status}


def _each_parses(items: list[WorldItem], parse, problems: list[str]) -> bool:
    """Every item's own problems, each named (the app-wide render then names only the first)."""
    before = len(problems)
    kind = {parse_email: "email", parse_chat: "chat", parse_event: "event"}[parse]
    for item in items:
        try:
            parse(item.content, item.metadata)
            parse_kept(kind, item.metadata)
        except ApplicationError as exc:
            problems.append(f"{item.path}: {exc.message}")
    return len(problems) == before


def _render_mail(emails: list[WorldItem], result: _Rendered) -> None:
    if not emails or not _each_parses(emails, parse_email, result.problems):
        return
    try:
        result.apps[MBOX] = render_mbox(emails, world_key=WORLD_KEY)
        ids = email_message_ids(emails, world_key=WORLD_KEY)
    except ApplicationError as exc:  # threads: a missing or later root, a circle; two emails with one Message-ID
        result.problems.append(exc.message)
        return
    result.ids["mail"] = {own: path for path, own in ids.items()}


def _render_chat(chats: list[WorldItem], result: _Rendered) -> None:
    if not chats or not _each_parses(chats, parse_chat, result.problems):
        return
    try:
        files = render_chat(chats, world_key=WORLD_KEY)
        ids = chat_message_ids(chats, world_key=WORLD_KEY)  # the renderer's own: the ids in messages.json
    except ApplicationError as exc:
        result.problems.append(exc.message)
        return
    result.apps.update({CHAT_DIR + name: data for name, data in files.items()})
    result.ids["chat"] = {own: path for path, own in ids.items()}


def _render_calendar(events: list[WorldItem], result: _Rendered) -> None:
    if not events or not _each_parses(events, parse_event, result.problems):
        return
    try:
        result.apps[ICS] = render_ics(events, world_key=WORLD_KEY)
        ids = event_uids(events, world_key=WORLD_KEY)
    except ApplicationError as exc:
        result.problems.append(exc.message)
        return
    result.ids["calendar"] = {uid: path for path, uid in ids.items()}
