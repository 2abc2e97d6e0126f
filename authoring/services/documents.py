from pathlib import PurePosixPath

from django.db import IntegrityError, transaction
from django.db.models import F, Max

from accounts.models import User
from authoring.models import Document, DocumentFormat, DocumentKind, DocumentStatus, DocumentVersion, VersionSource, World
from authoring.rendering.headers import KEPT_KEYS, parse_kept
from authoring.services.common import author_membership, check_revision
from core.exceptions import ApplicationError
from core.validation import reject_unstorable

MAX_CONTENT_CHARS = 500_000
MAX_DOCUMENTS_PER_WORLD = 5_000
METADATA_KEYS = {
    "from",
    "to",
    "cc",
    "bcc",
    "date",
    "subject",
    "channel",
    "author",
    "attendees",
    "start",
    "end",
    "location",
    "thread",
    "attachments",
}
# What an imported email, chat message or event came with (ids, all-day, recurrence,
# time zone, attendees' answers): kept so a re-export writes them (docs/content-format.md).
METADATA_KEYS |= {key for keys in KEPT_KEYS.values() for key in keys}


def clean_path(path: str) -> str:
    """A data-room path: relative, forward slashes, no '..', no empty segments."""
    path = (path or "").strip().replace("\\", "/")
    if not path:
        raise ApplicationError("A document needs a path, e.g. Deal/Letter of intent.docx.")
    if len(path) > 500:
        raise ApplicationError("The path is too long (500 characters at most).")
    if path.startswith("/") or any(part in ("", ".", "..") for part in path.split("/")):
        raise ApplicationError(f"{path!r} is not a valid data-room path: use folders like Deal/Notes.md, without '..'.")
    if any(ord(ch) < 32 for ch in path):
        raise ApplicationError("The path contains control characters.")
    return path


def clean_document_fields(*, path: str, kind: str, format: str, metadata: object, target_size: object) -> dict:
    path = clean_path(path)
    if kind not in DocumentKind.values:
        raise ApplicationError(f"Unknown kind {kind!r}; choose one of {', '.join(DocumentKind.values)}.")
    if kind == DocumentKind.FILE:
        format = format or PurePosixPath(path).suffix.lstrip(".").lower()
        if not format:
            raise ApplicationError(f"A file's path ends with its format, e.g. {path}.docx: one of .{', .'.join(DocumentFormat.values)}.")
        if format not in DocumentFormat.values:
            raise ApplicationError(f"Unknown file format {format!r}; choose one of {', '.join(DocumentFormat.values)}.")
    else:
        format = ""
    if not isinstance(metadata, dict):
        raise ApplicationError("Metadata must be an object of fields such as from, to, date, subject.")
    reject_unstorable(metadata, label="The metadata")
    unknown = set(metadata) - METADATA_KEYS
    if unknown:
        raise ApplicationError(f"Unknown metadata field(s): {', '.join(sorted(unknown))}.")
    if kind in KEPT_KEYS:
        parse_kept(kind, metadata)  # group and user ids become folder names of a world zip: checked before they are stored
    try:
        target_size = int(target_size)
    except (TypeError, ValueError):
        raise ApplicationError("Target size must be a whole number of words.") from None
    if not 0 <= target_size <= 100_000:
        raise ApplicationError("Target size must be between 0 and 100,000 words.")
    return {"path": path, "kind": kind, "format": format, "metadata": metadata, "target_size": target_size}


@transaction.atomic
def document_create(
    *, world: World, user: User, path: str, kind: str = DocumentKind.FILE, format: str = "", brief: str = "",
    metadata: dict | None = None, target_size: int = 300, content: str = "",
) -> Document:
    author_membership(user=user, project_id=world.project_id)
    fields = clean_document_fields(path=path, kind=kind, format=format, metadata=metadata or {}, target_size=target_size)
    if len(content) > MAX_CONTENT_CHARS or len(brief) > 20_000:
        raise ApplicationError("The brief or content is too long.")
    last_position = world.documents.aggregate(last=Max("position"))["last"] or 0
    if world.documents.count() >= MAX_DOCUMENTS_PER_WORLD:
        raise ApplicationError(f"A world holds at most {MAX_DOCUMENTS_PER_WORLD:,} documents.")
    try:
        with transaction.atomic():
            document = Document.objects.create(
                world=world,
                brief=brief,
                content=content,
                status=DocumentStatus.EDITED if content else DocumentStatus.SKELETON,
                position=last_position + 1,
                updated_by=user,
                **fields,
            )
    except IntegrityError:
        raise ApplicationError(f"There is already a document at {fields['path']!r} in this world.") from None
    if content:
        document_version_record(document=document, source=VersionSource.EDITED, user=user)
    return document


def document_version_record(*, document: Document, source: str, user: User | None, note: str = "") -> DocumentVersion:
    """Keep the document's current content and metadata as its next numbered version."""
    number = (document.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    return DocumentVersion.objects.create(
        document=document, number=number, content=document.content, metadata=document.metadata,
        source=source, note=note[:500], created_by=user if getattr(user, "is_authenticated", False) else None,
    )


@transaction.atomic
def document_update(
    *, document: Document, user: User, base_revision: int | None, path: str | None = None, kind: str | None = None,
    format: str | None = None, brief: str | None = None, metadata: dict | None = None,
    target_size: int | None = None, content: str | None = None, locked: bool | None = None,
    version_source: str = VersionSource.EDITED, version_note: str = "",
) -> Document:
    """Change any subset of a document's fields (None = leave as is). A change of content
    or metadata is kept as a new DocumentVersion."""
    author_membership(user=user, project_id=document.world.project_id)
    document = Document.objects.select_for_update().get(pk=document.pk)
    fields = clean_document_fields(
        path=document.path if path is None else path,
        kind=document.kind if kind is None else kind,
        format=(document.format if format is None else format) if (kind or document.kind) == DocumentKind.FILE else "",
        metadata=document.metadata if metadata is None else metadata,
        target_size=document.target_size if target_size is None else target_size,
    )
    fields["brief"] = document.brief if brief is None else brief
    fields["content"] = document.content if content is None else content
    if len(fields["content"]) > MAX_CONTENT_CHARS or len(fields["brief"]) > 20_000:
        raise ApplicationError("The brief or content is too long.")
    check_revision(
        obj=document,
        base_revision=base_revision,
        fields={"path": fields["path"], "brief": fields["brief"], "content": fields["content"]},
        label=f"Document {document.path!r}",
    )
    was_locked = document.status == DocumentStatus.LOCKED
    will_lock = was_locked if locked is None else locked
    content_changed = fields["content"] != document.content
    metadata_changed = fields["metadata"] != document.metadata
    if was_locked and will_lock and content_changed:
        raise ApplicationError("This document is locked. Unlock it before editing its content.")
    if Document.objects.filter(world_id=document.world_id, path=fields["path"]).exclude(pk=document.pk).exists():
        raise ApplicationError(f"There is already a document at {fields['path']!r} in this world.")
    for name, value in fields.items():
        setattr(document, name, value)
    if will_lock:
        document.status = DocumentStatus.LOCKED
    elif content_changed or was_locked:
        document.status = DocumentStatus.EDITED if document.content else DocumentStatus.SKELETON
    document.updated_by = user
    document.revision = F("revision") + 1
    document.save(update_fields=[*fields, "status", "updated_by", "revision", "updated_at"])
    document.refresh_from_db()
    if content_changed or metadata_changed:
        document_version_record(document=document, source=version_source, user=user, note=version_note)
    return document


@transaction.atomic
def document_version_restore(*, version: DocumentVersion, user: User, base_revision: int | None) -> Document:
    """Bring back an earlier version's content and metadata (as a new version: nothing
    in between is lost)."""
    return document_update(
        document=version.document, user=user, base_revision=base_revision, content=version.content,
        metadata=version.metadata, version_source=VersionSource.RESTORED, version_note=f"Restored version {version.number}",
    )


@transaction.atomic
def document_delete(*, document: Document, user: User) -> None:
    author_membership(user=user, project_id=document.world.project_id)
    if document.status == DocumentStatus.LOCKED:
        raise ApplicationError("This document is locked. Unlock it before deleting it.")
    document.delete()


@transaction.atomic
def document_move(*, document: Document, user: User, direction: str) -> None:
    """Swap a document with its neighbour above or below (positions are renumbered densely)."""
    author_membership(user=user, project_id=document.world.project_id)
    if direction not in ("up", "down"):
        raise ApplicationError("Move a document 'up' or 'down'.")
    siblings = list(Document.objects.select_for_update().filter(world_id=document.world_id).order_by("position", "id"))
    index = next(i for i, d in enumerate(siblings) if d.pk == document.pk)
    other = index - 1 if direction == "up" else index + 1
    if 0 <= other < len(siblings):
        siblings[index], siblings[other] = siblings[other], siblings[index]
    for position, sibling in enumerate(siblings, start=1):
        if sibling.position != position:
            Document.objects.filter(pk=sibling.pk).update(position=position)
