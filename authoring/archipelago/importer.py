"""A world zip in the APEX-Agents / Archipelago layout → the documents of a new world.

Pure over bytes (no database): the service stores what this returns. The archive is
checked whole by core.archives.check_zip (traversal, absolute paths, symlinks, entry
count, sizes, compression ratio) before a single entry is read, and each entry is then
read with its own size cap; nothing is ever written to disk under the archive's names.

- filesystem/<path> → a file document at <path> (folders kept). When the zip's
  world.json holds the file's source text and the file is byte for byte the one
  Taskwright rendered from it (sha256), that text is the content, exactly; otherwise the
  type is decided from the bytes and the text extracted (authoring.extraction), as for an
  upload, and the original is kept.
- .apps_data/mail/*.mbox → emails; .apps_data/chat/Groups/<id>/ → chat messages;
  .apps_data/calendar/*.ics → events (see apps.py). world.json names their paths;
  without it, paths are made from dates and subjects.
"""

import hashlib
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import BinaryIO

from authoring import extraction
from core.archives import check_zip, safe_member_read
from core.exceptions import ApplicationError

from .apps import AppItem, read_calendar, read_chat_group, read_mbox
from .export import FILE_METADATA_KEYS, MAX_PROBLEMS_SHOWN
from .layout import (
    APPS_DATA,
    ARCHIVE_LIMITS,
    CALENDAR_DIR,
    CHAT_DIR,
    FILESYSTEM,
    MAIL_DIR,
    MAX_APP_FILE_BYTES,
    MAX_FILE_BYTES,
    MAX_SIDECAR_BYTES,
    MBOX,
    SIDECAR,
    SIDECAR_VERSION,
)

FILE_FORMATS = ("docx", "xlsx", "pptx", "pdf", "md", "csv")
# What operating systems and archivers leave behind; never part of a world.
_JUNK_NAMES = {".DS_Store", "Thumbs.db", "desktop.ini"}


@dataclass
class ImportedDocument:
    path: str
    kind: str
    format: str
    content: str
    metadata: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    original: bytes | None = None  # a file whose text was extracted: its bytes, kept as the uploaded original
    original_extension: str = ""


@dataclass
class ImportedWorld:
    title: str
    documents: list[ImportedDocument]


@dataclass
class _Sidecar:
    title: str = ""
    files: dict = field(default_factory=dict)
    ids: dict = field(default_factory=lambda: {"mail": {}, "chat": {}, "calendar": {}})


def read_world_zip(source: BinaryIO) -> ImportedWorld:
    """The documents of the world in `source` (a seekable binary file). Raises
    ApplicationError, with a message for the user, on an unsafe or unreadable archive."""
    entries = check_zip(source, **ARCHIVE_LIMITS)  # before anything is read
    prefix = _layout_prefix([info.filename for info in entries])
    source.seek(0)
    with zipfile.ZipFile(source) as archive:
        files: list[tuple[str, str]] = []  # (path under filesystem/, entry name)
        mboxes, calendars = [], []
        groups: dict[str, dict[str, str]] = {}
        sidecar_name = None
        for info in entries:
            if info.is_dir() or not info.filename.startswith(prefix):
                continue
            name = info.filename[len(prefix):]
            base = name.rsplit("/", 1)[-1]
            if base in _JUNK_NAMES or base.startswith("._") or "/__MACOSX/" in f"/{name}":
                continue
            if name.startswith(FILESYSTEM):
                files.append((name[len(FILESYSTEM):], info.filename))
            elif name == SIDECAR:
                sidecar_name = info.filename
            elif name.startswith(MAIL_DIR) and name.lower().endswith(".mbox"):
                mboxes.append(info.filename)
            elif name.startswith(f"{CHAT_DIR}Groups/") and name.count("/") == 4:
                group_id, file_name = name.split("/")[3:5]
                groups.setdefault(group_id, {})[file_name] = info.filename
            elif name.startswith(CALENDAR_DIR) and name.lower().endswith(".ics"):
                calendars.append(info.filename)
        sidecar = _read_sidecar(archive, sidecar_name) if sidecar_name else _Sidecar()
        documents = _files(archive, sorted(files), sidecar)
        # sent.mbox first: it is the one Archipelago reads when there are several.
        mboxes.sort(key=lambda n: (n != prefix + MBOX, n))
        items: list[AppItem] = []
        for name in mboxes:
            items += read_mbox(safe_member_read(archive, name, MAX_APP_FILE_BYTES), name[len(prefix):])
        for group_id, group in sorted(groups.items()):
            if "messages.json" in group:
                info = safe_member_read(archive, group["group_info.json"], MAX_APP_FILE_BYTES) if "group_info.json" in group else None
                items += read_chat_group(group_id, safe_member_read(archive, group["messages.json"], MAX_APP_FILE_BYTES), info,
                                         group["messages.json"][len(prefix):])
        for name in sorted(calendars):
            items += read_calendar(safe_member_read(archive, name, MAX_APP_FILE_BYTES), name[len(prefix):])
    documents += _app_documents(items, sidecar, {d.path for d in documents})
    return ImportedWorld(title=sidecar.title, documents=documents)


def _layout_prefix(names: list[str]) -> str:
    """"" for a world zip as exported; "<folder>/" when the whole layout sits in one
    folder (what zipping a folder gives)."""
    if any(n.startswith((FILESYSTEM, APPS_DATA)) for n in names):
        return ""
    tops = {n.split("/", 1)[0] for n in names if "/" in n and not n.startswith("__MACOSX/")}
    if len(tops) == 1:
        top = f"{tops.pop()}/"
        if any(n.startswith((top + FILESYSTEM, top + APPS_DATA)) for n in names):
            return top
    raise ApplicationError(
        "This zip is not a world in the APEX-Agents layout: it has no filesystem/ or .apps_data/ folder at its top."
    )


def _read_sidecar(archive: zipfile.ZipFile, name: str) -> _Sidecar:
    bad = ApplicationError(f"{SIDECAR} in this zip is damaged; remove it to import the world from its files alone.")
    try:
        raw = json.loads(safe_member_read(archive, name, MAX_SIDECAR_BYTES).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise bad from None
    if not isinstance(raw, dict) or raw.get("taskwright_world") != SIDECAR_VERSION:
        return _Sidecar()  # another version's notes: read the world from its files
    sidecar = _Sidecar(title=str(raw.get("title") or ""))
    files = raw.get("files") or {}
    if not isinstance(files, dict):
        raise bad
    for path, entry in files.items():
        if not (isinstance(entry, dict) and entry.get("format") in FILE_FORMATS and isinstance(entry.get("content"), str)
                and isinstance(entry.get("sha256"), str) and isinstance(entry.get("metadata", {}), dict)):
            raise bad
        sidecar.files[path] = entry
    for kind in sidecar.ids:
        ids = raw.get(kind) or {}
        if not isinstance(ids, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in ids.items()):
            raise bad
        sidecar.ids[kind] = ids
    return sidecar


def _files(archive: zipfile.ZipFile, files: list[tuple[str, str]], sidecar: _Sidecar) -> list[ImportedDocument]:
    documents, problems = [], []
    for path, name in files:
        try:
            documents.append(_file(path, safe_member_read(archive, name, MAX_FILE_BYTES), sidecar.files.get(path)))
        except ApplicationError as exc:
            problems.append(f"filesystem/{path}: {exc.message.split(' Accepted: ')[0]}")  # the list of formats is said once, below
    if problems:
        shown = "; ".join(p.rstrip(". ") for p in problems[:MAX_PROBLEMS_SHOWN])
        more = f"; and {len(problems) - MAX_PROBLEMS_SHOWN} more" if len(problems) > MAX_PROBLEMS_SHOWN else ""
        raise ApplicationError(
            f"The world was not imported: {len(problems)} file{'s' if len(problems) != 1 else ''} cannot be read "
            f"({shown}{more}). Remove {'them' if len(problems) != 1 else 'it'} from the zip, or convert {'them' if len(problems) != 1 else 'it'} to one of: {extraction.ACCEPTED}."
        )
    return documents


def _file(path: str, data: bytes, source: dict | None) -> ImportedDocument:
    if source is not None and hashlib.sha256(data).hexdigest() == source["sha256"]:
        # The very file Taskwright rendered from this text: the text is the document.
        metadata = {k: str(v) for k, v in source.get("metadata", {}).items() if k in FILE_METADATA_KEYS}
        return ImportedDocument(path=path, kind="file", format=source["format"], content=source["content"], metadata=metadata)
    suffix = PurePosixPath(path).suffix.lower()
    if not data:
        return ImportedDocument(path=path, kind="file", format="csv" if suffix == ".csv" else "md", content="")
    detected = extraction.detect_format(data, path)
    # An .eml in the drive is a file agents open there, not a message in the mailbox: kept as text.
    extracted = extraction.extract(data, "txt" if detected == "eml" else detected)
    return ImportedDocument(
        path=path, kind="file", format=extracted.format, content=extracted.content, notes=extracted.notes,
        original=data, original_extension=detected,
    )


def _app_documents(items: list[AppItem], sidecar: _Sidecar, used: set[str]) -> list[ImportedDocument]:
    """Paths for mail, chat and events (world.json's when it names them), then threads
    as the paths of their roots."""
    known_kind = {"email": "mail", "chat": "chat", "event": "calendar"}
    paths: dict[tuple[str, str], str] = {}  # (kind, id) → path
    placed: list[tuple[AppItem, str]] = []
    for item in items:
        known = sidecar.ids[known_kind[item.kind]].get(item.id) if item.id else None
        if item.id and (item.kind, item.id) in paths:
            known = None  # a repeated id: the second message is its own document
        path = _free(known if known and known not in used else item.suggested_path, used)
        used.add(path)
        if item.id:
            paths.setdefault((item.kind, item.id), path)
        placed.append((item, path))
    documents = []
    for item, path in placed:
        metadata = dict(item.metadata)
        root = paths.get((item.kind, item.root_id)) if item.root_id and item.root_id != item.id else None
        if root and root != path:
            metadata["thread"] = root
        documents.append(ImportedDocument(path=path, kind=item.kind, format="", content=item.content, metadata=metadata,
                                          notes=tuple(item.notes)))
    return documents


def _free(path: str, used: set[str]) -> str:
    if path not in used:
        return path
    stem, dot, extension = path.rpartition(".") if "." in path.rsplit("/", 1)[-1] else (path, "", "")
    n = 2
    while f"{stem} ({n}){dot}{extension}" in used:
        n += 1
    return f"{stem} ({n}){dot}{extension}"
