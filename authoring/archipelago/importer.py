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
- .apps_data/mail/*.mbox → emails; .apps_data/chat/Groups/<id>/ → chat messages (with
  the user ids of .apps_data/chat/Users/<id>/); .apps_data/calendar/*.ics → events (see
  apps.py). world.json names their paths; without it, paths are made from dates and
  subjects. The ids they came with are kept where Taskwright would write others (kept.py).
- world.json also brings back the world's outline and facts sheet and each document's
  brief, target size, status and metadata (layout.SIDECAR). A file whose bytes changed
  outside Taskwright keeps its brief but is "edited", whatever it was.
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

from .apps import AppItem, read_calendar, read_chat_group, read_chat_users, read_mbox
from .export import FILE_METADATA_KEYS, MAX_PROBLEMS_SHOWN
from .kept import kept_ids, merged_metadata
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
    SIDECAR_VERSIONS_READ,
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
    brief: str = ""
    target_size: int | None = None  # None: the content's length in words
    status: str = ""  # "": edited


@dataclass
class ImportedWorld:
    title: str
    documents: list[ImportedDocument]
    outline: str = ""
    facts: list = field(default_factory=list)


@dataclass
class _Sidecar:
    version: int = 0  # 0: none (or one of a version this code does not know)
    title: str = ""
    outline: str = ""
    facts: list = field(default_factory=list)
    files: dict = field(default_factory=dict)  # path under filesystem/ → {format, sha256, content, metadata, + notes}
    ids: dict = field(default_factory=lambda: {"mail": {}, "chat": {}, "calendar": {}})  # id → {path, + notes}


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
        users: dict[str, str] = {}  # user id → entry name of its user_info.json
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
            elif name.startswith(f"{CHAT_DIR}Users/") and name.count("/") == 4 and name.endswith("/user_info.json"):
                users[name.split("/")[3]] = info.filename
            elif name.startswith(CALENDAR_DIR) and name.lower().endswith(".ics"):
                calendars.append(info.filename)
        sidecar = _read_sidecar(archive, sidecar_name) if sidecar_name else _Sidecar()
        documents = _files(archive, sorted(files), sidecar)
        # sent.mbox first: it is the one Archipelago reads when there are several.
        mboxes.sort(key=lambda n: (n != prefix + MBOX, n))
        items: list[AppItem] = []
        people = read_chat_users({uid: safe_member_read(archive, name, MAX_APP_FILE_BYTES) for uid, name in users.items()})
        for name in mboxes:
            items += read_mbox(safe_member_read(archive, name, MAX_APP_FILE_BYTES), name[len(prefix):])
        for group_id, group in sorted(groups.items()):
            if "messages.json" in group:
                info = safe_member_read(archive, group["group_info.json"], MAX_APP_FILE_BYTES) if "group_info.json" in group else None
                items += read_chat_group(group_id, safe_member_read(archive, group["messages.json"], MAX_APP_FILE_BYTES), info,
                                         group["messages.json"][len(prefix):], people)
        for name in sorted(calendars):
            items += read_calendar(safe_member_read(archive, name, MAX_APP_FILE_BYTES), name[len(prefix):])
    documents += _app_documents(items, sidecar, {d.path for d in documents})
    return ImportedWorld(title=sidecar.title, documents=documents, outline=sidecar.outline, facts=sidecar.facts)


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
    if not isinstance(raw, dict) or raw.get("taskwright_world") not in SIDECAR_VERSIONS_READ:
        return _Sidecar()  # another version's notes: read the world from its files
    version = raw["taskwright_world"]
    sidecar = _Sidecar(version=version, title=str(raw.get("title") or ""))
    if version >= 2:
        sidecar.outline, sidecar.facts = raw.get("outline", ""), raw.get("facts", [])
        if not isinstance(sidecar.outline, str) or not isinstance(sidecar.facts, list):
            raise bad
    files = raw.get("files") or {}
    if not isinstance(files, dict):
        raise bad
    for path, entry in files.items():
        if not (isinstance(entry, dict) and entry.get("format") in FILE_FORMATS and isinstance(entry.get("content"), str)
                and isinstance(entry.get("sha256"), str) and isinstance(entry.get("metadata", {}), dict) and _notes_ok(entry)):
            raise bad
        sidecar.files[path] = entry
    for kind in sidecar.ids:
        ids = raw.get(kind) or {}
        if not isinstance(ids, dict) or not all(isinstance(k, str) for k in ids):
            raise bad
        for key, entry in ids.items():
            entry = {"path": entry} if version == 1 else entry  # version 1: id → path
            if not (isinstance(entry, dict) and isinstance(entry.get("path"), str) and isinstance(entry.get("metadata", {}), dict)
                    and _notes_ok(entry)):
                raise bad
            sidecar.ids[kind][key] = entry
    return sidecar


def _notes_ok(entry: dict) -> bool:
    """A document's notes in world.json (version 2): brief, target size, status, all optional."""
    size = entry.get("target_size", 0)
    return (isinstance(entry.get("brief", ""), str) and isinstance(entry.get("status", ""), str)
            and isinstance(size, int) and not isinstance(size, bool) and size >= 0)


def _with_notes(document: ImportedDocument, entry: dict, *, status: bool = True) -> ImportedDocument:
    document.brief = entry.get("brief", "")
    document.target_size = entry.get("target_size")
    if status:
        document.status = entry.get("status", "")
    return document


def _files(archive: zipfile.ZipFile, files: list[tuple[str, str]], sidecar: _Sidecar) -> list[ImportedDocument]:
    documents, problems = [], []
    for path, name in files:
        try:
            documents.append(_file(path, safe_member_read(archive, name, MAX_FILE_BYTES), sidecar.files.get(path), sidecar.version))
        except ApplicationError as exc:
            problems.append(f"filesystem/{path}: {exc.message.split(' Accepted: ')[0]}")  # the list of formats is said once, below
    if problems:
        shown = "; ".join(p.rstrip(". ") for p in problems[:MAX_PROBLEMS_SHOWN])
        more = f"; and {len(problems) - MAX_PROBLEMS_SHOWN} more" if len(problems) > MAX_PROBLEMS_SHOWN else ""
        raise ApplicationError(
            f"The world was not imported: {len(problems)} file{'s' if len(problems) != 1 else ''} cannot be read "
            f"({shown}{more}). Remove {'them' if len(problems) != 1 else 'it'} from the zip, "
            f"or convert {'them' if len(problems) != 1 else 'it'} to one of: {extraction.ACCEPTED}."
        )
    return documents


def _file(path: str, data: bytes, source: dict | None, version: int) -> ImportedDocument:
    # Version 1 kept only the metadata a file's rendering reads; version 2 keeps all of it.
    metadata = {} if source is None else dict(source.get("metadata", {})) if version >= 2 else {
        k: str(v) for k, v in source.get("metadata", {}).items() if k in FILE_METADATA_KEYS}
    if source is not None and hashlib.sha256(data).hexdigest() == source["sha256"]:
        # The very file Taskwright rendered from this text: the text is the document.
        document = ImportedDocument(path=path, kind="file", format=source["format"], content=source["content"], metadata=metadata)
        return _with_notes(document, source)
    suffix = PurePosixPath(path).suffix.lower()
    if not data:
        document = ImportedDocument(path=path, kind="file", format="csv" if suffix == ".csv" else "md", content="")
    else:
        detected = extraction.detect_format(data, path)
        # An .eml in the drive is a file agents open there, not a message in the mailbox: kept as text.
        extracted = extraction.extract(data, "txt" if detected == "eml" else detected)
        document = ImportedDocument(
            path=path, kind="file", format=extracted.format, content=extracted.content, notes=extracted.notes,
            original=data, original_extension=detected,
        )
    if source is None or version < 2:
        return document
    # Changed outside Taskwright: its notes still describe it, but it is no longer what was locked or drafted.
    document.metadata = metadata
    return _with_notes(document, source, status=False)


def _app_documents(items: list[AppItem], sidecar: _Sidecar, used: set[str]) -> list[ImportedDocument]:
    """Paths for mail, chat and events (world.json's when it names them), then threads
    as the paths of their roots, the ids they came with, and world.json's notes."""
    known_kind = {"email": "mail", "chat": "chat", "event": "calendar"}
    paths: dict[tuple[str, str], str] = {}  # (kind, id) → path
    placed: list[tuple[AppItem, str, str, dict | None]] = []  # item, path, its id ("" when repeated), world.json's entry
    for item in items:
        repeated = bool(item.id) and (item.kind, item.id) in paths  # the second message with an id is its own document
        entry = sidecar.ids[known_kind[item.kind]].get(item.id) if item.id and not repeated else None
        if entry is not None and entry["path"] in used:
            entry = None
        path = _free(entry["path"] if entry else item.suggested_path, used)
        used.add(path)
        if item.id and not repeated:
            paths[(item.kind, item.id)] = path
        placed.append((item, path, "" if repeated else item.id, entry))
    own_at = {path: own for _item, path, own, _entry in placed}
    documents = []
    for item, path, own, entry in placed:
        root = (paths.get((item.kind, item.root_id)) if item.root_id and item.root_id != item.id else None) or path
        metadata = dict(item.metadata)
        if root != path:
            metadata["thread"] = root
        metadata.update(kept_ids(item, path=path, root=root, own=own, root_own=own_at.get(root, "")))
        document = ImportedDocument(path=path, kind=item.kind, format="", content=item.content, metadata=metadata, notes=tuple(item.notes))
        if entry is not None and "metadata" in entry:
            document.metadata = merged_metadata(item.kind, item.content, metadata, entry["metadata"])
        documents.append(_with_notes(document, entry) if entry is not None else document)
    return documents


def _free(path: str, used: set[str]) -> str:
    if path not in used:
        return path
    stem, dot, extension = path.rpartition(".") if "." in path.rsplit("/", 1)[-1] else (path, "", "")
    n = 2
    while f"{stem} ({n}){dot}{extension}" in used:
        n += 1
    return f"{stem} ({n}){dot}{extension}"
