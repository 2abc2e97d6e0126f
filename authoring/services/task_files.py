"""A task's input files: files the agent receives with the task, laid over its world's
files at their paths (workspace.tools.world.world_items_of).

Bytes are stored content-addressed, `task-files/<sha256>`, and never overwritten or
deleted: a frozen task version names its files by sha256 (env_task_snapshot), so a pack
built from it later still finds the bytes it was approved with, whatever the author did
to the task since. Removing a file removes the task's row only. A file's type is decided
from its content as for a world upload (authoring.extraction), and the text the agent's
tools read is extracted once, on upload.

Every write is all or nothing: what is refused (too big, an unreadable type, a bad or
taken path) is checked before anything is stored, the bytes are stored next (outside the
transaction: a storage write cannot roll back), and the rows are written in one
transaction.
"""

import hashlib
from dataclasses import dataclass

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from authoring import extraction
from authoring.models import EnvTask, TaskInputFile
from authoring.services.common import author_membership
from authoring.services.documents import MAX_CONTENT_CHARS, clean_path
from authoring.services.tasks import require_editable
from authoring.services.uploads import MAX_FILES_PER_UPLOAD, clean_file_name, read_upload
from core.exceptions import ApplicationError
from core.files import save_once

TASK_FILES_FOLDER = "task-files"
MAX_INPUT_FILES_PER_TASK = 50


def task_file_name(sha256: str) -> str:
    """Where the bytes with this sha256 are in storage."""
    return f"{TASK_FILES_FOLDER}/{sha256}"


def task_file_store(data: bytes) -> str:
    """Store the bytes under their sha256 (once: the same bytes are one stored file) and
    return the sha256."""
    sha256 = hashlib.sha256(data).hexdigest()
    save_once(task_file_name(sha256), data)
    return sha256


@dataclass
class _Incoming:
    path: str
    data: bytes
    format: str
    content: str


def _readable(*, data: bytes, name: str, path: str) -> _Incoming:
    """The file as the agent will read it, or ApplicationError naming the file. An email,
    mailbox or calendar is read as the text file it is (it is one file, not mail)."""
    try:
        detected = extraction.detect_format(data, name)
        detected = "txt" if detected == "eml" else detected
        extracted = extraction.extract(data, detected, max_chars=MAX_CONTENT_CHARS)
    except ApplicationError as exc:
        raise ApplicationError(f"{name}: {exc.message}") from None
    return _Incoming(path=path, data=data, format=extraction.DOCUMENT_TYPES[detected][1], content=extracted.content)


def _path(folder: str, name: str) -> str:
    folder = (folder or "").strip().strip("/")
    return clean_path(f"{folder}/{name}" if folder else name)


def _incoming(uploaded_file: UploadedFile, *, folder: str = "") -> _Incoming:
    name = clean_file_name(uploaded_file.name or "")
    return _readable(data=read_upload(uploaded_file), name=name, path=_path(folder, name))


def _locked_editable(env_task: EnvTask) -> EnvTask:
    """The task, locked for this transaction, if it may still be edited."""
    locked = EnvTask.objects.select_for_update().get(pk=env_task.pk)
    require_editable(locked)
    return locked


def _touch(env_task: EnvTask, user: User) -> None:
    # Not a new revision: adding a file must not make an open editor's prompt edit stale.
    EnvTask.objects.filter(pk=env_task.pk).update(updated_by=user, updated_at=timezone.now())


def _check_room(env_task: EnvTask, incoming: list[_Incoming], *, replace: bool) -> dict[str, TaskInputFile]:
    """Refuse a path the upload holds twice, a path the task has (unless `replace`), and more
    files than a task holds. Returns the task's files by path."""
    existing = {f.path: f for f in env_task.input_files.all()}
    seen: set[str] = set()
    for item in incoming:
        if item.path in seen:
            raise ApplicationError(f"Two of the files would land at {item.path!r}: upload them in different folders.")
        if item.path in existing and not replace:
            raise ApplicationError(f"This task already has an input file at {item.path!r}: tick “Replace files already at "
                                   "these paths” to upload it again, or remove it first.")
        seen.add(item.path)
    if len(existing.keys() | seen) > MAX_INPUT_FILES_PER_TASK:
        raise ApplicationError(f"A task has at most {MAX_INPUT_FILES_PER_TASK} input files; remove some before adding more.")
    return existing


def _add(env_task: EnvTask, user: User, incoming: list[_Incoming], *, replace: bool = False) -> list[TaskInputFile]:
    """Checked, then stored, then written in one transaction, checked again under the task's
    lock. A storage write cannot roll back: what a refusal after it leaves is bytes no row
    names (a race lost), harmless and shared by any later upload of the same file. With
    `replace`, a file at a path the task has takes the old one's place; the old bytes stay
    in storage for the versions that name them. The caller has checked `user` is an author
    of the project (before reading any upload)."""
    require_editable(env_task)
    _check_room(env_task, incoming, replace=replace)
    stored = [task_file_store(item.data) for item in incoming]
    with transaction.atomic():
        env_task = _locked_editable(env_task)
        existing = _check_room(env_task, incoming, replace=replace)
        rows = []
        for item, sha256 in zip(incoming, stored, strict=True):
            row = existing.get(item.path) or TaskInputFile(env_task=env_task, path=item.path)
            row.file, row.sha256, row.size = task_file_name(sha256), sha256, len(item.data)
            row.format, row.content, row.created_by = item.format, item.content, user
            row.save()
            rows.append(row)
        _touch(env_task, user)
    return rows


def task_input_files_add(
    *, env_task: EnvTask, user: User, uploaded_files: list[UploadedFile], folder: str = "", replace: bool = False,
) -> list[TaskInputFile]:
    """Add uploaded files to the task's input files, at `folder`/<file name>; all of them
    or, when any is refused, none. `replace`: a file at a path the task has replaces it
    (else that is refused)."""
    author_membership(user=user, project_id=env_task.project_id)
    if not uploaded_files:
        raise ApplicationError("Choose one or more files to upload.")
    if len(uploaded_files) > MAX_FILES_PER_UPLOAD:
        raise ApplicationError(f"Upload at most {MAX_FILES_PER_UPLOAD} files at a time.")
    return _add(env_task, user, [_incoming(f, folder=folder) for f in uploaded_files], replace=replace)


def task_input_file_add_bytes(*, env_task: EnvTask, user: User, path: str, data: bytes) -> TaskInputFile:
    """One input file from bytes already read (a pack import, the demo)."""
    author_membership(user=user, project_id=env_task.project_id)
    return _add(env_task, user, [_readable(data=data, name=path.rpartition("/")[2], path=clean_path(path))])[0]


@transaction.atomic
def task_input_file_remove(*, input_file: TaskInputFile, user: User) -> None:
    author_membership(user=user, project_id=input_file.env_task.project_id)
    env_task = _locked_editable(input_file.env_task)
    TaskInputFile.objects.filter(pk=input_file.pk).delete()
    _touch(env_task, user)
