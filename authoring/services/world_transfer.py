"""A world out as a zip in the APEX-Agents / Archipelago layout, and such a zip in as a
new world (authoring.archipelago does the formats; this module the roles and the database).

Authors and admins export and import; reviewers read worlds in the editor but take none
away (a world zip is the whole data room at once). A member of another project gets 404.
The zip carries the world's own content (outline, facts sheet, each document's brief,
target size and status) and an import restores it.
"""

import logging
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import BinaryIO

from django.core.files.base import ContentFile, File
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from accounts.models import Membership, User
from accounts.selectors import membership_get
from authoring import archipelago
from authoring.models import Document, DocumentStatus, DocumentVersion, VersionSource, World
from authoring.services import documents as document_rules
from authoring.services.worlds import world_create
from core.exceptions import ApplicationError, PermissionRefused
from core.validation import reject_unstorable

logger = logging.getLogger(__name__)


def _require_author(*, user: User, project_id: int, verb: str) -> Membership:
    membership = membership_get(user=user, project_id=project_id)  # 404 for a non-member
    if not membership.can_author:
        raise PermissionRefused(
            f"Your role in this project ({membership.get_role_display().lower()}) cannot {verb}; authors and admins can."
        )
    return membership


def world_export(*, world: World, user: User) -> BinaryIO:
    """The world as a zip, in a temporary file positioned at its start (the caller closes it)."""
    _require_author(user=user, project_id=world.project_id, verb="export worlds")
    return world_export_archive(world=world)


def world_export_archive(*, world: World | None = None, snapshot: Mapping | None = None) -> BinaryIO:
    """world_export without a role check, for `manage.py export_world` (run by an operator)
    and pack builds: of a world as it is now, or of a frozen `snapshot` of one (the shape
    world_snapshot gives). Reads no database for a snapshot."""
    if (world is None) == (snapshot is None):
        raise TypeError("world_export_archive takes a world or a snapshot")
    out = tempfile.TemporaryFile()  # noqa: SIM115 -- handed to the caller, who closes it
    try:
        archipelago.write_world_snapshot_zip(world_snapshot(world=world) if snapshot is None else snapshot, out=out)
    except BaseException:
        out.close()
        raise
    out.seek(0)
    return out


def world_snapshot(*, world: World) -> dict:
    """The world as plain values, what a world zip is written from:
    {"id", "title", "outline", "facts", "documents": [{"path", "kind", "format", "brief",
    "metadata", "target_size", "content", "status"}]}."""
    fields = ("path", "kind", "format", "brief", "metadata", "target_size", "content", "status")
    return {
        "id": world.pk, "title": world.title, "outline": world.outline, "facts": list(world.facts or []),
        "documents": [{**row, "metadata": row["metadata"] or {}} for row in world.documents.order_by("path").values(*fields)],
    }


def world_export_filename(world: World) -> str:
    return f"{slugify(world.title)[:80] or 'world'}-{world.pk}.zip"


def world_import(*, project_id: int, user: User, uploaded_file: File, title: str = "") -> World:
    """A new world in the project from a world zip. Everything is checked and read
    before anything is stored; any refusal raises ApplicationError and leaves nothing:
    no world, no document, no stored original."""
    _require_author(user=user, project_id=project_id, verb="import worlds")
    size = uploaded_file.size
    if size is not None and size > archipelago.MAX_ARCHIVE_BYTES:
        raise ApplicationError(f"The zip is larger than {archipelago.MAX_ARCHIVE_BYTES // (1024 * 1024)} MB; "
                               "split the world or remove large files first.")
    uploaded_file.seek(0)
    parsed = archipelago.read_world_zip(uploaded_file.file)
    archive_name = PurePosixPath((uploaded_file.name or "").replace("\\", "/")).name
    title = " ".join((title or "").split()) or parsed.title or PurePosixPath(archive_name).stem or "Imported world"
    if len(parsed.documents) > document_rules.MAX_DOCUMENTS_PER_WORLD:
        raise ApplicationError(f"The zip holds {len(parsed.documents):,} documents; a world holds at most "
                               f"{document_rules.MAX_DOCUMENTS_PER_WORLD:,}.")
    rows = [_document_row(d) for d in parsed.documents]
    stored: list[Document] = []
    try:
        for row, imported in zip(rows, parsed.documents, strict=True):
            if imported.original is not None:
                # Our name for it (uuid + detected type); stored before the transaction, removed if it fails.
                row.source_name = PurePosixPath(imported.path).name[:255]
                row.source_file.save(f"{uuid.uuid4().hex}.{imported.original_extension}", ContentFile(imported.original), save=False)
                stored.append(row)
        with transaction.atomic():
            try:
                world = world_create(project_id=project_id, user=user, title=title[:200], outline=parsed.outline, facts=parsed.facts)
            except ApplicationError as exc:
                raise ApplicationError(f"The world was not imported: its outline or facts sheet (world.json): {exc.message}") from None
            for position, row in enumerate(rows, start=1):
                row.world, row.position, row.updated_by = world, position, user
            try:
                with transaction.atomic():
                    Document.objects.bulk_create(rows)
            except IntegrityError:
                raise ApplicationError("Two documents of the zip end up at the same path; rename one and import again.") from None
            note = f"Imported from {archive_name or 'a world zip'}."
            DocumentVersion.objects.bulk_create([
                DocumentVersion(document=row, number=1, content=row.content, metadata=row.metadata, source=VersionSource.UPLOADED,
                                note=" ".join([note, *imported.notes])[:500], created_by=user)
                for row, imported in zip(rows, parsed.documents, strict=True)
            ])
    except BaseException:
        for row in stored:
            row.source_file.delete(save=False)
        raise
    logger.info("World %s imported into project %s with %d documents", world.pk, project_id, len(rows))
    return world


MAX_BRIEF_CHARS = 20_000  # as document_create and document_update take
IMPORTED_STATUSES = (DocumentStatus.DRAFTED, DocumentStatus.EDITED, DocumentStatus.LOCKED, DocumentStatus.SKELETON)


def _document_row(imported: archipelago.ImportedDocument) -> Document:
    """An unsaved Document, after the same checks a document created by hand passes."""
    try:
        fields = document_rules.clean_document_fields(
            path=imported.path, kind=imported.kind, format=imported.format, metadata=imported.metadata,
            target_size=min(len(imported.content.split()), 100_000) if imported.target_size is None else imported.target_size,
        )
        if len(imported.content) > document_rules.MAX_CONTENT_CHARS:
            raise ApplicationError(f"its text is longer than {document_rules.MAX_CONTENT_CHARS:,} characters.")
        if len(imported.brief) > MAX_BRIEF_CHARS:
            raise ApplicationError(f"its brief is longer than {MAX_BRIEF_CHARS:,} characters.")
        if imported.status and imported.status not in IMPORTED_STATUSES:
            raise ApplicationError(f"its status {imported.status!r} (world.json) is not one of {', '.join(IMPORTED_STATUSES)}.")
        reject_unstorable(imported.content, label="Its text")
        reject_unstorable(imported.brief, label="Its brief")
    except ApplicationError as exc:
        raise ApplicationError(f"The world was not imported: {imported.path}: {exc.message}") from None
    return Document(content=imported.content, brief=imported.brief, status=imported.status or DocumentStatus.EDITED, **fields)
