"""What one uploaded file becomes in the data room, decided before anything is stored
(the upload service, uploads.py, stores the plan in one transaction).

- a Word, Excel, PowerPoint, PDF, CSV, Markdown or text file → one file document;
- an email (.eml) → an email document, and each attachment a file document in an
  Attachments/ folder beside the mail, named in the mail's `attachments` metadata (what
  the world export writes as X-Attachments); an attached invitation (.ics) becomes its
  calendar events; an attached email is kept as a text file;
- a mailbox (.mbox) → its messages, in a folder named after the file, threads kept
  (metadata "thread": the path of the thread's first message, the world import's rules);
- a calendar (.ics) → one calendar event per VEVENT, in a folder named after the file.

What cannot be kept (an attachment of a type Taskwright does not read, an event without
a start, a message already in the data room …) is listed as `Left`, with the reason.
"""

import datetime as dt
import unicodedata
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from authoring import extraction
from authoring.archipelago.apps import AppItem, name_part, settle_threads
from authoring.archipelago.kept import kept_ids
from authoring.archipelago.layout import WORLD_KEY
from authoring.extraction.calendar import EventPiece, read_calendar
from authoring.extraction.common import Left
from authoring.extraction.mail import MailPiece, read_mailbox, read_message
from authoring.models import DocumentKind, World
from authoring.rendering import RenderError
from authoring.rendering.events import item_uid
from authoring.rendering.headers import parse_email, parse_when
from authoring.rendering.mail import email_message_id
from authoring.services import documents
from core.exceptions import ApplicationError

DEFAULT_FOLDER = "Uploads"
ATTACHMENTS_FOLDER = "Attachments"
INVITATIONS_FOLDER = "Calendar"
_KNOWN_SUFFIXES = {".docx", ".xlsx", ".pptx", ".pdf", ".eml", ".mbox", ".ics", ".csv", ".md", ".markdown", ".txt"}
MAX_NAME_CHARS = 120
_FORBIDDEN_NAME_CHARS = str.maketrans(dict.fromkeys('<>:"|?*', "_"))


def clean_file_name(name: str) -> str:
    """The client's file name made harmless: no folders, no control or bidi characters,
    no characters other systems forbid, bounded length. Empty becomes "upload"."""
    name = unicodedata.normalize("NFC", name.replace("\\", "/").rsplit("/", 1)[-1])
    name = "".join(
        ch for ch in name if unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp") or ch in ("\u200c", "\u200d")
    )
    name = " ".join(name.translate(_FORBIDDEN_NAME_CHARS).split()).strip(" .")
    if len(name) > MAX_NAME_CHARS:
        suffix = PurePosixPath(name).suffix
        suffix = suffix if len(suffix) <= 10 else ""
        name = name[: MAX_NAME_CHARS - len(suffix)].rstrip(" .") + suffix
    return name or "upload"


@dataclass
class Planned:
    """One document to create."""

    path: str
    kind: str
    format: str
    content: str
    metadata: dict
    note: str  # its first version's note
    source_name: str
    original: bytes | None = None  # kept as the document's original upload
    original_extension: str = ""
    remark: str = ""  # said next to it on the upload's report
    free_path: bool = True  # False: the path the uploader chose, refused when taken


@dataclass
class Plan:
    format: str  # what the file was found to be
    documents: list[Planned] = field(default_factory=list)
    left: list[Left] = field(default_factory=list)


class _Room:
    """The world's paths and the ids its mail and events already use, plus this upload's."""

    def __init__(self, world: World) -> None:
        self.paths: set[str] = set()
        self.email_ids: dict[str, tuple[str, dt.datetime | None]] = {}  # Message-ID → (path, date)
        self.event_uids: dict[str, str] = {}
        for path, kind, metadata in world.documents.values_list("path", "kind", "metadata"):
            self.paths.add(path)
            metadata = metadata or {}
            try:
                if kind == DocumentKind.EMAIL:
                    self.email_ids[email_message_id(metadata, world_key=WORLD_KEY, path=path)] = (path, _date(metadata))
                elif kind == DocumentKind.EVENT:
                    self.event_uids[item_uid(metadata, world_key=WORLD_KEY, path=path)] = path
            except RenderError:
                continue  # an id the renderer would refuse is no id to match

    def take(self, path: str, *, free: bool = True) -> str:
        path = documents.clean_path(path)
        if free and path in self.paths:
            stem, dot, extension = path.rpartition(".") if "." in path.rsplit("/", 1)[-1] else (path, "", "")
            for n in range(2, 10_000):
                candidate = f"{stem} ({n}){dot}{extension}"
                if candidate not in self.paths:
                    path = documents.clean_path(candidate)
                    break
            else:
                raise ApplicationError(f"Too many uploads named {path!r}; choose another path.")
        self.paths.add(path)
        return path


def _date(metadata: dict) -> dt.datetime | None:
    try:
        return parse_when(metadata.get("date"), "date")
    except RenderError:
        return None


def plan_file(*, world: World, data: bytes, name: str, path: str = "") -> Plan:
    """The documents an uploaded file (`name`: its cleaned name) becomes. Raises
    ApplicationError when the file is refused as a whole."""
    detected = extraction.detect_format(data, name)
    room = _Room(world)
    plan = Plan(format=detected)
    if detected == "ics":
        pieces, left = read_calendar(data, known=room.event_uids)
        plan.left += left
        _plan_events(plan, room, pieces, folder=_folder(path, name), source=name, remark="")
        if not plan.documents:
            raise _nothing_kept("calendar", plan.left)
    elif detected == "mbox":
        messages = [read_message(raw) for raw in read_mailbox(data)]
        _plan_mail(plan, room, messages, folder=_folder(path, name), source=name)
        if not any(p.kind == DocumentKind.EMAIL for p in plan.documents):
            raise _nothing_kept("mailbox", plan.left)
    elif detected == "eml":
        message = read_message(data)
        target = document_path(path, name, "eml")
        _plan_mail(plan, room, [message], folder=str(PurePosixPath(target).parent), source=name, paths=[(target, bool(path))])
        if not any(p.kind == DocumentKind.EMAIL for p in plan.documents):
            raise ApplicationError(f"{plan.left[0].item}: {plan.left[0].reason}" if plan.left else "This email cannot be kept.")
    else:
        extracted = extraction.extract(data, detected, max_chars=documents.MAX_CONTENT_CHARS)
        kind, document_format, extension = extraction.DOCUMENT_TYPES[detected]
        plan.documents.append(Planned(
            path=room.take(document_path(path, name, extension), free=not path), kind=kind, format=document_format,
            content=extracted.content, metadata=extracted.metadata,
            note=" ".join([f"Uploaded from {name} ({detected}).", *extracted.notes]), source_name=name,
            original=data, original_extension=detected, free_path=not path,
        ))
    return plan


def _nothing_kept(noun: str, left: list[Left]) -> ApplicationError:
    reasons = "; ".join(f"{item.item}: {item.reason.rstrip('.')}" for item in left[:3]) or f"it is an empty {noun}"
    more = f" (and {len(left) - 3} more)" if len(left) > 3 else ""
    return ApplicationError(f"Nothing in this {noun} can be kept: {reasons}{more}.")


def document_path(path: str, original_name: str, extension: str) -> str:
    """The path of a single uploaded file: `path` as given (a folder when it ends in "/"),
    else Uploads/<name>; its extension always matches what the file is."""
    stem = PurePosixPath(original_name).stem if PurePosixPath(original_name).suffix else original_name
    if not path:
        return f"{DEFAULT_FOLDER}/{stem or 'upload'}.{extension}"
    path = path.strip().replace("\\", "/")
    if path.endswith("/"):
        return f"{path}{stem or 'upload'}.{extension}"
    suffix = PurePosixPath(path).suffix.lower()
    if suffix == f".{extension}":
        return path
    if suffix in _KNOWN_SUFFIXES:
        raise ApplicationError(
            f"The path {path!r} ends in {suffix}, but the file is {extension.upper()}: use a path ending in .{extension}."
        )
    return f"{path}.{extension}"


def _folder(path: str, name: str) -> str:
    """Where the items of a mailbox or calendar go: the folder `path` names (without a
    .mbox / .ics ending), else Uploads/<file name without its extension>."""
    path = path.strip().replace("\\", "/").strip("/")
    if path:
        return path[: -len(PurePosixPath(path).suffix)] if PurePosixPath(path).suffix.lower() in (".mbox", ".ics") else path
    return f"{DEFAULT_FOLDER}/{name_part(PurePosixPath(name).stem, 'upload')}"


# --- calendar -------------------------------------------------------------------------------

def _plan_events(plan: Plan, room: _Room, pieces: list[EventPiece], *, folder: str, source: str, remark: str) -> None:
    for piece in pieces:
        path = room.take(f"{folder}/{piece.start:%Y-%m-%d} {name_part(piece.subject, 'Event')}")
        if piece.uid:
            room.event_uids[piece.uid] = path
        plan.documents.append(Planned(
            path=path, kind=DocumentKind.EVENT, format="", content=piece.content, metadata=piece.metadata,
            note=" ".join([f"Uploaded from {source} (ics).", *piece.notes]), source_name=f"{path.rsplit('/', 1)[-1]}.ics",
            original=piece.original, original_extension="ics", remark=remark,
        ))


# --- mail -----------------------------------------------------------------------------------

def _mail_label(message: MailPiece) -> str:
    subject = f"“{message.subject}”" if message.subject else "without a subject"
    return f"The email {subject}" + (f" of {message.when:%d %b %Y}" if message.when else "")


def _plan_mail(plan: Plan, room: _Room, messages: list[MailPiece], *, folder: str, source: str,
               paths: list[tuple[str, bool]] | None = None) -> None:
    """Emails (with their attachments) at `paths` (path, chosen by the uploader), else in
    `folder` by date and subject. Threads as the world import keeps them."""
    placed: list[tuple[MailPiece, Planned, AppItem]] = []
    own_at: dict[str, str] = {}  # path → its Message-ID
    for n, message in enumerate(messages):
        if message.id and message.id in room.email_ids:
            plan.left.append(Left(_mail_label(message), f"it is already in the data room as {room.email_ids[message.id][0]}."))
            continue
        if paths:
            wanted, chosen = paths[n]
        else:
            stamp = f"{message.when:%Y-%m-%d %H%M} " if message.when else ""
            wanted, chosen = f"{folder}/{stamp}{name_part(message.subject, 'No subject')}.eml", False
        path = room.take(wanted, free=not chosen)
        if message.id:
            room.email_ids[message.id] = (path, message.when)
            own_at[path] = message.id
        planned = Planned(
            path=path, kind=DocumentKind.EMAIL, format="", content=message.content, metadata=dict(message.metadata),
            note=" ".join([f"Uploaded from {source} ({'eml' if paths else 'mbox'}).", *message.notes]),
            source_name=source if paths else path.rsplit("/", 1)[-1], original=message.original, original_extension="eml",
            free_path=not chosen,
        )
        item = AppItem(kind="email", id=message.id, content=message.content, metadata=planned.metadata, suggested_path=path,
                       root_id=message.thread_ref, when=message.when, raw={"thread_id": message.thread_id})
        placed.append((message, planned, item))
        plan.left += message.left
    # A thread whose first message is already in the world joins it there; the others are
    # settled as the world import settles them (a missing or later root: the oldest stands for it).
    here = {planned.path for _m, planned, _i in placed}
    in_world = {id(item): item.root_id for _m, _p, item in placed
                if item.root_id in room.email_ids and room.email_ids[item.root_id][0] not in here}
    settle_threads([item for _m, _p, item in placed])
    for _m, _p, item in placed:
        item.root_id = in_world.get(id(item), item.root_id)
    own_at.update({path: own for own, (path, _when) in room.email_ids.items() if path not in own_at})
    for message, planned, item in placed:
        root = _thread_root(item, planned.path, room)
        if root != planned.path:
            planned.metadata["thread"] = root
        elif item.root_id and item.root_id != item.id:
            item.raw["thread_id"] = item.raw.get("thread_id") or item.root_id  # its first message is elsewhere: name it
        planned.metadata.update(kept_ids(item, path=planned.path, root=root, own=item.id, root_own=own_at.get(root, "")))
        plan.documents.append(planned)
        _plan_attachments(plan, room, message, planned, source=source)
        try:
            parse_email(planned.content, planned.metadata)
        except RenderError as exc:
            planned.remark = f"Kept, but the world cannot be exported until this email is fixed: {exc.message}"


def _thread_root(item: AppItem, path: str, room: _Room) -> str:
    """The path of the thread's first message, in this upload or already in the world
    (when no message of the thread would be older than it); else the email's own path."""
    if not item.root_id or item.root_id == item.id or item.root_id not in room.email_ids:
        return path
    root_path, root_date = room.email_ids[item.root_id]
    if root_path == path or (item.when is not None and root_date is not None and item.when < root_date):
        return path
    return root_path


def _plan_attachments(plan: Plan, room: _Room, message: MailPiece, email: Planned, *, source: str) -> None:
    folder = str(PurePosixPath(email.path).parent)
    folder = "" if folder == "." else f"{folder}/"
    named = [p for p in str(email.metadata.get("attachments") or "").split(",") if p.strip()]
    left_before, kept_here = len(plan.left), []
    for n, attachment in enumerate(message.attachments, start=1):
        # commas separate the paths of `attachments` (and of X-Attachments): none in a name
        name = " ".join(clean_file_name(attachment.name or f"Attachment {n}").replace(",", " ").split())
        what = f"The attachment {name} of the email {email.path}"
        try:
            detected = extraction.detect_format(attachment.data, name)
            if detected == "ics":  # an invitation: its events, in the calendar
                pieces, left = read_calendar(attachment.data, known=room.event_uids)
                plan.left += left
                _plan_events(plan, room, pieces, folder=f"{folder}{INVITATIONS_FOLDER}", source=f"{name} in {source}",
                             remark=f"From the invitation attached to {email.path}")
                continue
            as_text = detected in ("eml", "mbox")  # a forwarded email or a mailbox is a text file in the drive
            extracted = extraction.extract(attachment.data, "txt" if as_text else detected, max_chars=documents.MAX_CONTENT_CHARS)
            _kind, document_format, extension = extraction.DOCUMENT_TYPES["txt" if as_text else detected]
            path = room.take(document_path(f"{folder}{ATTACHMENTS_FOLDER}/", name, extension))
            fields = documents.clean_document_fields(path=path, kind="file", format=document_format, metadata={}, target_size=0)
        except ApplicationError as exc:
            plan.left.append(Left(what, _plain_reason(exc.message)))
            continue
        named.append(fields["path"])
        kept_here.append(fields["path"])
        plan.documents.append(Planned(
            path=fields["path"], kind=DocumentKind.FILE, format=document_format, content=extracted.content, metadata={},
            note=" ".join([f"Attachment {name} of {email.path}, uploaded in {source} ({detected}).", *extracted.notes]),
            source_name=name, original=attachment.data, original_extension=detected, remark=f"Attached to {email.path}",
        ))
    if named:
        email.metadata["attachments"] = ", ".join(p.strip() for p in named)
    # The email's history says what became of its attachments.
    if kept_here:
        email.note += f" Attachments kept as files: {', '.join(kept_here)}."
    lost = [f"{left.item.removeprefix('The attachment ').split(' of the email ')[0]} ({left.reason.rstrip('.')})"
            for left in plan.left[left_before:] if left.item.startswith("The attachment ")]
    if lost:
        email.note += f" Attachments not kept: {'; '.join(lost)}."


_KINDS_OF_CONTENT = {"image/": "a picture", "audio/": "a sound recording", "video/": "a video"}


def _plain_reason(message: str) -> str:
    """Why an attachment is not kept, said of it ("it is a picture …"), without the list
    of accepted formats the upload form already shows."""
    message = message.split(" Accepted: ")[0]
    prefix = "This file's content is "
    if message.startswith(prefix):
        mime = message.removeprefix(prefix).split(" ", 1)[0]
        kind = next((noun for start, noun in _KINDS_OF_CONTENT.items() if mime.startswith(start)), f"a {mime} file")
        return (f"it is {kind} ({mime.rsplit('/', 1)[-1].upper()}), which the data room does not hold: it keeps documents, "
                "spreadsheets, slides, PDFs, text, emails and calendars.")
    for start, said in (("This is ", "it is "), ("This file ", "it "), ("This ", "this ")):
        if message.startswith(start):
            return said + message.removeprefix(start)
    return message
