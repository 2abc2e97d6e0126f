"""Uploading an existing file into a world's data room.

The file's type is decided from its content (authoring.extraction), never from its name
or the browser's Content-Type; its text becomes the document's content, and the original
bytes are kept under a server-chosen name (a uuid + the detected extension) to be served
only as an attachment. The client's name is kept, cleaned, as `source_name`.
"""

import unicodedata
import uuid
from pathlib import PurePosixPath

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.db.models import Max

from accounts.models import User
from authoring import extraction
from authoring.models import Document, DocumentStatus, VersionSource, World
from authoring.services import documents
from authoring.services.common import author_membership
from core.exceptions import ApplicationError

MAX_UPLOAD_BYTES = 20 * 1024 * 1024
MAX_FILES_PER_UPLOAD = settings.DATA_UPLOAD_MAX_NUMBER_FILES  # Django refuses more while parsing the request
MAX_NAME_CHARS = 120
DEFAULT_FOLDER = "Uploads"
_FORBIDDEN_NAME_CHARS = str.maketrans(dict.fromkeys('<>:"|?*', "_"))
_KNOWN_SUFFIXES = {".docx", ".xlsx", ".pptx", ".pdf", ".eml", ".csv", ".md", ".markdown", ".txt"}


def document_upload(*, world: World, user: User, uploaded_file: UploadedFile, path: str = "") -> Document:
    """Create a data-room document from an uploaded file.

    `path` is the document's place in the data room; empty means Uploads/<file name>, and
    a path ending in "/" is a folder to put the file in. Its extension always matches the
    detected format. Refusals raise ApplicationError (Http404 for a non-member) and leave
    nothing behind: no document, no version, no stored file.
    """
    author_membership(user=user, project_id=world.project_id)
    _check_room(world)
    data = _read(uploaded_file)
    detected = extraction.detect_format(data, uploaded_file.name or "")
    extracted = extraction.extract(data, detected, max_chars=documents.MAX_CONTENT_CHARS)
    kind, document_format, extension = extraction.DOCUMENT_TYPES[detected]
    original_name = clean_file_name(uploaded_file.name or "")
    default_path = not path
    path = _document_path(path, original_name, extension)
    fields = documents.clean_document_fields(
        path=path, kind=kind, format=document_format, metadata=extracted.metadata,
        target_size=min(len(extracted.content.split()), 100_000),
    )
    if default_path:
        fields["path"] = _free_path(world, fields["path"])

    # Stored before the transaction (a storage write cannot roll back), removed again if
    # the transaction fails. The name is ours: a uuid and the detected extension.
    document = Document(world=world, source_name=original_name[:255])
    document.source_file.save(f"{uuid.uuid4().hex}.{detected}", ContentFile(data), save=False)
    try:
        with transaction.atomic():
            _check_room(world)
            last_position = world.documents.aggregate(last=Max("position"))["last"] or 0
            for name, value in fields.items():
                setattr(document, name, value)
            document.content = extracted.content
            document.status = DocumentStatus.EDITED
            document.position = last_position + 1
            document.updated_by = user
            try:
                with transaction.atomic():
                    document.save(force_insert=True)
            except IntegrityError:
                raise ApplicationError(f"There is already a document at {fields['path']!r} in this world.") from None
            note = " ".join([f"Uploaded from {original_name} ({detected}).", *extracted.notes])
            documents.document_version_record(document=document, source=VersionSource.UPLOADED, user=user, note=note)
    except BaseException:
        document.source_file.delete(save=False)
        raise
    return document


class UploadRefused(ApplicationError):
    """Some files of an upload were refused, so none was added. `files`: [{index, name, detail}]."""

    def __init__(self, message: str, files: list[dict]) -> None:
        super().__init__(message)
        self.files = files


def documents_upload(*, world: World, user: User, uploaded_files: list[UploadedFile]) -> list[Document]:
    """Upload several files into the data room, all or nothing (the page and the API both
    call this): when any file is refused, none is added and UploadRefused says why, per
    file, so that sending again never makes "x (2).pdf" copies of the files that did go in.
    Storage does not roll back with the database: the originals already stored are deleted."""
    author_membership(user=user, project_id=world.project_id)
    if not uploaded_files:
        raise ApplicationError("Choose one or more files to upload.")
    if len(uploaded_files) > MAX_FILES_PER_UPLOAD:
        raise ApplicationError(f"Upload at most {MAX_FILES_PER_UPLOAD} files at a time.")
    created: list[Document] = []
    refused: list[dict] = []
    try:
        with transaction.atomic():
            for index, uploaded in enumerate(uploaded_files):
                try:
                    created.append(document_upload(world=world, user=user, uploaded_file=uploaded))
                except ApplicationError as error:
                    refused.append({"index": index, "name": clean_file_name(uploaded.name or ""), "detail": error.message})
            if refused:
                transaction.set_rollback(True)
    except BaseException:
        _delete_originals(created)
        raise
    if refused:
        _delete_originals(created)
        reasons = {item["detail"] for item in refused}
        if len(reasons) == 1 and len(refused) == len(uploaded_files):
            message = reasons.pop()
        else:
            message = (f"{len(refused)} of {len(uploaded_files)} files were refused, so none was added: "
                       "fix or leave out those files and send again.")
        raise UploadRefused(message, refused)
    return created


def _delete_originals(created: list[Document]) -> None:
    for document in created:
        document.source_file.delete(save=False)


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


def _read(uploaded_file: UploadedFile) -> bytes:
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


def _check_room(world: World) -> None:
    if world.documents.count() >= documents.MAX_DOCUMENTS_PER_WORLD:
        raise ApplicationError(
            f"A world holds at most {documents.MAX_DOCUMENTS_PER_WORLD:,} documents; delete some before uploading more."
        )


def _document_path(path: str, original_name: str, extension: str) -> str:
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


def _free_path(world: World, path: str) -> str:
    """Uploads/x.pdf, else Uploads/x (2).pdf, … so uploading a same-named file twice
    keeps both. (A race on the last free name ends in the unique constraint's error.)"""
    taken = set(world.documents.filter(path__startswith=path.rsplit(".", 1)[0]).values_list("path", flat=True))
    if path not in taken:
        return path
    stem, _, extension = path.rpartition(".")
    for n in range(2, 1000):
        candidate = f"{stem} ({n}).{extension}"
        if candidate not in taken:
            return documents.clean_path(candidate)
    raise ApplicationError(f"Too many uploads named {path!r}; choose another path.")
