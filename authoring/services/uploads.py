"""Uploading existing files into a world's data room.

The file's type is decided from its content (authoring.extraction), never from its name
or the browser's Content-Type. A file keeps what it holds (upload_plans.py): a document
becomes one document; an email becomes an email document and its attachments files
linked from it; a mailbox becomes its messages, threads kept; a calendar becomes its
events. What cannot be kept is reported, with the reason (UploadOutcome.left). Original
bytes are kept under a server-chosen name (a uuid + the detected extension) to be served
only as an attachment; the client's name is kept, cleaned, as `source_name`.
"""

import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.db.models import Max

from accounts.models import User
from authoring.extraction.common import Left
from authoring.models import Document, DocumentStatus, VersionSource, World
from authoring.services import documents
from authoring.services.common import author_membership
from authoring.services.upload_plans import DEFAULT_FOLDER, Planned, clean_file_name, plan_file
from core.exceptions import ApplicationError

MAX_UPLOAD_BYTES = 20 * 1024 * 1024
MAX_FILES_PER_UPLOAD = settings.DATA_UPLOAD_MAX_NUMBER_FILES  # Django refuses more while parsing the request

__all__ = [
    "DEFAULT_FOLDER", "MAX_FILES_PER_UPLOAD", "MAX_UPLOAD_BYTES", "KeptItem", "UploadOutcome", "UploadRefused", "UploadReport",
    "clean_file_name", "document_upload", "documents_upload", "file_upload", "read_upload",
]


@dataclass
class KeptItem:
    document: Document
    remark: str = ""  # e.g. "Attached to Uploads/re-msa.eml"


@dataclass
class UploadOutcome:
    """What one uploaded file became: the documents kept, and what was not kept and why."""

    name: str
    format: str
    kept: list[KeptItem] = field(default_factory=list)
    left: list[Left] = field(default_factory=list)

    @property
    def documents(self) -> list[Document]:
        return [item.document for item in self.kept]


@dataclass
class UploadReport:
    files: list[UploadOutcome]

    @property
    def documents(self) -> list[Document]:
        return [document for outcome in self.files for document in outcome.documents]

    @property
    def left(self) -> list[Left]:
        return [item for outcome in self.files for item in outcome.left]


def file_upload(*, world: World, user: User, uploaded_file: UploadedFile, path: str = "") -> UploadOutcome:
    """Add what an uploaded file holds to the data room.

    `path` is the place of a single document (empty: Uploads/<file name>; ending in "/":
    a folder), or the folder for a mailbox's messages or a calendar's events. Refusals
    raise ApplicationError (Http404 for a non-member) and leave nothing behind: no
    document, no version, no stored file.
    """
    author_membership(user=user, project_id=world.project_id)
    _check_room(world)
    data = read_upload(uploaded_file)
    name = clean_file_name(uploaded_file.name or "")
    plan = plan_file(world=world, data=data, name=name, path=path)
    stored = _store(world=world, user=user, planned=plan.documents)
    return UploadOutcome(
        name=name, format=plan.format, kept=[KeptItem(d, p.remark) for d, p in zip(stored, plan.documents, strict=True)],
        left=plan.left,
    )


def document_upload(*, world: World, user: User, uploaded_file: UploadedFile, path: str = "") -> Document:
    """file_upload, for callers that want the file's main document: the document, the
    email (before its attachments), the mailbox's first message or the calendar's first event."""
    return file_upload(world=world, user=user, uploaded_file=uploaded_file, path=path).kept[0].document


def _store(*, world: World, user: User, planned: list[Planned]) -> list[Document]:
    """Create the planned documents in one transaction. Originals are stored before it (a
    storage write cannot roll back) and removed again when it fails."""
    rows: list[Document] = []
    try:
        for item in planned:
            try:
                fields = documents.clean_document_fields(
                    path=item.path, kind=item.kind, format=item.format, metadata=item.metadata,
                    target_size=min(len(item.content.split()), 100_000),
                )
            except ApplicationError as exc:
                raise ApplicationError(f"{item.path}: {exc.message}") from None
            row = Document(world=world, source_name=item.source_name[:255], content=item.content, status=DocumentStatus.EDITED,
                           updated_by=user, **fields)
            if item.original is not None:
                row.source_file.save(f"{uuid.uuid4().hex}.{item.original_extension}", ContentFile(item.original), save=False)
            rows.append(row)
        with transaction.atomic():
            _check_room(world, adding=len(rows))
            last_position = world.documents.aggregate(last=Max("position"))["last"] or 0
            for n, (row, item) in enumerate(zip(rows, planned, strict=True), start=1):
                row.position = last_position + n
                try:
                    with transaction.atomic():
                        row.save(force_insert=True)
                except IntegrityError:
                    raise ApplicationError(f"There is already a document at {row.path!r} in this world.") from None
                documents.document_version_record(document=row, source=VersionSource.UPLOADED, user=user, note=item.note)
    except BaseException:
        _delete_originals(rows)
        raise
    return rows


class UploadRefused(ApplicationError):
    """Some files of an upload were refused, so none was added. `files`: [{index, name, detail}]."""

    def __init__(self, message: str, files: list[dict]) -> None:
        super().__init__(message)
        self.files = files


def documents_upload(*, world: World, user: User, uploaded_files: list[UploadedFile]) -> UploadReport:
    """Upload several files into the data room, all or nothing (the page and the API both
    call this): when any file is refused, none is added and UploadRefused says why, per
    file, so that sending again never makes "x (2).pdf" copies of the files that did go in.
    Storage does not roll back with the database: the originals already stored are deleted.
    A file that is kept may still leave parts out (an attachment of an unread type, an
    event without a start): the report lists them per file."""
    author_membership(user=user, project_id=world.project_id)
    if not uploaded_files:
        raise ApplicationError("Choose one or more files to upload.")
    if len(uploaded_files) > MAX_FILES_PER_UPLOAD:
        raise ApplicationError(f"Upload at most {MAX_FILES_PER_UPLOAD} files at a time.")
    outcomes: list[UploadOutcome] = []
    refused: list[dict] = []
    try:
        with transaction.atomic():
            for index, uploaded in enumerate(uploaded_files):
                try:
                    outcomes.append(file_upload(world=world, user=user, uploaded_file=uploaded))
                except ApplicationError as error:
                    refused.append({"index": index, "name": clean_file_name(uploaded.name or ""), "detail": error.message})
            if refused:
                transaction.set_rollback(True)
    except BaseException:
        _delete_originals([d for outcome in outcomes for d in outcome.documents])
        raise
    if refused:
        _delete_originals([d for outcome in outcomes for d in outcome.documents])
        reasons = {item["detail"] for item in refused}
        if len(reasons) == 1 and len(refused) == len(uploaded_files):
            message = reasons.pop()
        else:
            message = (f"{len(refused)} of {len(uploaded_files)} files were refused, so none was added: "
                       "fix or leave out those files and send again.")
        raise UploadRefused(message, refused)
    return UploadReport(files=outcomes)


def _delete_originals(created: list[Document]) -> None:
    for document in created:
        if document.source_file:
            document.source_file.delete(save=False)


def read_upload(uploaded_file: UploadedFile) -> bytes:
    """The uploaded file's bytes, refused past MAX_UPLOAD_BYTES (counted, not taken from the client)."""
    too_big = ApplicationError(
        f"The file is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB; upload files of at most "
        f"{MAX_UPLOAD_BYTES // (1024 * 1024)} MB."
    )
    if uploaded_file.size is not None and uploaded_file.size > MAX_UPLOAD_BYTES:
        raise too_big
    chunks, size = [], 0
    for chunk in uploaded_file.chunks():
        size += len(chunk)
        if size > MAX_UPLOAD_BYTES:  # the declared size is the client's word; count
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


def _check_room(world: World, adding: int = 1) -> None:
    have, most = world.documents.count(), documents.MAX_DOCUMENTS_PER_WORLD
    if have + adding > most:
        if adding <= 1:
            raise ApplicationError(f"A world holds at most {most:,} documents; delete some before uploading more.")
        raise ApplicationError(f"This file holds {adding:,} documents and the world has room for {max(0, most - have):,} more "
                               f"(a world holds at most {most:,}); delete some documents or split the file.")
