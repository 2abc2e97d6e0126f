"""Every write of the workspace app: overlays, and the entries tools write into them.
The authored world is never touched here: an overlay entry shadows, adds or hides a
data-room path, and only in its own overlay."""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from authoring.extraction.common import Left
from authoring.models import Document, DocumentFormat, DocumentKind, EnvTask, World
from authoring.rendering.headers import EMAIL
from authoring.services.common import author_membership
from authoring.services.documents import MAX_CONTENT_CHARS, clean_document_fields, clean_path
from authoring.services.upload_plans import clean_file_name, plan_file
from authoring.services.uploads import read_upload
from core.exceptions import ApplicationError
from core.validation import reject_unstorable
from workspace.models import DEFAULT_ACTOR_EMAIL, DEFAULT_ACTOR_NAME, Overlay, OverlayAction, OverlayEntry, OverlayPurpose

if TYPE_CHECKING:  # (workspace.tools imports these services)
    from workspace.tools.world import Item

MAX_OVERLAY_ENTRIES = 2_000


def _clean_actor(name: str | None, email: str | None) -> tuple[str, str]:
    name = " ".join(str(name or DEFAULT_ACTOR_NAME).split())
    email = str(email or DEFAULT_ACTOR_EMAIL).strip()
    if not name or len(name) > 200 or any(ch in name for ch in '<>"'):
        raise ApplicationError("The actor's name must be 1–200 characters, without <, > or quotes.")
    if len(email) > 254 or not EMAIL.match(email):
        raise ApplicationError(f"{email!r} is not a valid email address for the actor.")
    return name, email


def _check_purpose(purpose: str) -> None:
    if purpose not in OverlayPurpose.values:
        raise ApplicationError(f"Unknown overlay purpose {purpose!r}; choose one of {', '.join(OverlayPurpose.values)}.")


def _clean_label(label: str) -> str:
    label = " ".join(str(label or "").split())
    if len(label) > 200:
        raise ApplicationError("The label is too long (200 characters at most).")
    return label


@transaction.atomic
def overlay_create(
    *, world: World, user: User, label: str = "", purpose: str = OverlayPurpose.SANDBOX,
    actor_name: str | None = None, actor_email: str | None = None, env_task: EnvTask | None = None,
) -> Overlay:
    author_membership(user=user, project_id=world.project_id)
    _check_purpose(purpose)
    _check_task(world, env_task)
    label = _clean_label(label)
    actor_name, actor_email = _clean_actor(actor_name, actor_email)
    return Overlay.objects.create(
        world=world, label=label, purpose=purpose, actor_name=actor_name, actor_email=actor_email, env_task=env_task,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


@transaction.atomic
def overlays_create(*, world: World, user: User, labels: list[str], purpose: str, env_task: EnvTask | None = None) -> list[Overlay]:
    """One overlay per label, with the default actor, in one statement (a batch of trial
    rollouts gets its overlays when it starts, not one by one on the workers). `env_task`:
    the task whose input files the overlays show over the world."""
    author_membership(user=user, project_id=world.project_id)
    _check_purpose(purpose)
    _check_task(world, env_task)
    labels = [_clean_label(label) for label in labels]
    created_by = user if getattr(user, "is_authenticated", False) else None
    return Overlay.objects.bulk_create(Overlay(world=world, label=label, purpose=purpose, created_by=created_by, env_task=env_task)
                                       for label in labels)


def _check_task(world: World, env_task: EnvTask | None) -> None:
    if env_task is not None and env_task.world_id != world.pk:
        raise ApplicationError("That task is on another world.")


@transaction.atomic
def overlay_delete(*, overlay: Overlay, user: User) -> None:
    author_membership(user=user, project_id=overlay.world.project_id)
    overlay.delete()


def _check_room(overlay: Overlay, path: str) -> None:
    # Counted under the overlay's row lock so two concurrent writes cannot both pass.
    Overlay.objects.select_for_update().filter(pk=overlay.pk).first()
    entries = OverlayEntry.objects.filter(overlay_id=overlay.pk)
    if entries.count() >= MAX_OVERLAY_ENTRIES and not entries.filter(path=path).exists():
        raise ApplicationError(f"This workspace already holds {MAX_OVERLAY_ENTRIES:,} changes; no more can be made.")


def _touch(overlay: Overlay) -> None:
    overlay.changed_at = timezone.now()
    Overlay.objects.filter(pk=overlay.pk).update(changed_at=overlay.changed_at)


class PathTaken(ApplicationError):
    """A new item's path was taken meanwhile (another call on the same overlay made it first)."""


@transaction.atomic
def overlay_entry_upsert(*, overlay: Overlay, path: str, kind: str, format: str, content: str, metadata: dict,
                         create_only: bool = False) -> OverlayEntry:
    """Create or replace the overlay's state of `path` (the world's item, if any, is shadowed).
    `create_only`: a new item, never a replacement: PathTaken if the overlay holds the path
    (checked under the overlay's row lock, so of two concurrent calls the second sees the first's)."""
    path = clean_path(path)
    if kind not in DocumentKind.values or (kind == DocumentKind.FILE) != bool(format) or (format and format not in DocumentFormat.values):
        raise ApplicationError(f"Cannot store a {kind!r} item with format {format!r}.")
    if len(content) > MAX_CONTENT_CHARS:
        raise ApplicationError(f"The content is too long ({len(content):,} characters; at most {MAX_CONTENT_CHARS:,}).")
    reject_unstorable(content, label="The content")
    reject_unstorable(metadata, label="The metadata")
    _check_room(overlay, path)
    if create_only and OverlayEntry.objects.filter(overlay_id=overlay.pk, path=path).exists():
        raise PathTaken(f"{path!r} was made meanwhile by another call.")
    _touch(overlay)
    entry, _ = OverlayEntry.objects.update_or_create(
        overlay=overlay, path=path,
        defaults={"kind": kind, "format": format, "action": OverlayAction.UPSERT, "content": content, "metadata": metadata},
    )
    return entry


@transaction.atomic
def overlay_entry_delete(*, overlay: Overlay, path: str, original: "Item | None" = None) -> OverlayEntry | None:
    """Hide `path`. A path the world holds gets a delete entry; a path only the overlay
    added loses its entry (None is returned): the world never had it. `original`: what
    lies beneath the overlay at `path`, when the caller's workspace knows better than the
    world's documents (a rollout's has the task's input files too); else they are read."""
    path = clean_path(path)
    if original is not None:
        original = {"kind": original.kind, "format": original.format}
    else:
        original = Document.objects.filter(world_id=overlay.world_id, path=path).values("kind", "format").first()
    if original is None:
        if OverlayEntry.objects.filter(overlay_id=overlay.pk, path=path).delete()[0]:
            _touch(overlay)
        return None
    _check_room(overlay, path)
    _touch(overlay)
    entry, _ = OverlayEntry.objects.update_or_create(
        overlay=overlay, path=path,
        defaults={"kind": original["kind"], "format": original["format"], "action": OverlayAction.DELETE, "content": "", "metadata": {}},
    )
    return entry


# --- an author's hand in a sandbox ------------------------------------------------------------
# A person trying the apps writes through the agent's own tools (workspace.tools), so what
# they make is exactly what an agent would have made: the same paths, sender, dates and
# checks. These services add what the tools leave to their caller: who may write (an author
# of the project; anyone else is refused, an outsider never learns the sandbox exists) and
# where (a sandbox, never a trial run's workspace, which is kept as the agent left it).


@dataclass(frozen=True)
class SandboxUpload:
    format: str  # what the file was found to be
    paths: list[str]  # what it became, its main item first
    left: list[Left]  # what could not be kept, and why


def _sandbox_writer(*, overlay: Overlay, user: User) -> None:
    author_membership(user=user, project_id=overlay.world.project_id)
    if overlay.purpose != OverlayPurpose.SANDBOX:
        raise ApplicationError("This workspace belongs to a trial run and is kept as the agent left it: "
                               "only a sandbox can be changed by hand.")


def _workspace(overlay: Overlay):
    # Imported here: the tools import this module for the overlay writes above.
    from workspace.tools import Workspace

    return Workspace(overlay.world, overlay)


def _tool_call(ws, name: str, arguments: dict) -> str:
    """Run one of the agent's tools; its error becomes the service's. Returns the path the
    call created (or, for an edit, ""): read off the workspace, not parsed from its reply."""
    from workspace.tools import execute

    before = set(ws.paths())
    result = execute(workspace=ws, name=name, arguments=arguments)
    if result.is_error:
        raise ApplicationError(result.text)
    return next(iter(set(ws.paths()) - before), "")


@transaction.atomic
def sandbox_email_send(*, overlay: Overlay, user: User, to: list[str], cc: list[str], subject: str, body: str) -> str:
    """Send a new email as the sandbox's actor; returns its id (its path, in Mail/Sent)."""
    _sandbox_writer(overlay=overlay, user=user)
    return _tool_call(_workspace(overlay), "send_email", {"to": to, "cc": cc, "subject": subject, "body": body})


@transaction.atomic
def sandbox_email_reply(*, overlay: Overlay, user: User, email_id: str, body: str, reply_all: bool = False) -> str:
    _sandbox_writer(overlay=overlay, user=user)
    return _tool_call(_workspace(overlay), "reply_email", {"id": email_id, "body": body, "reply_all": reply_all})


@transaction.atomic
def sandbox_chat_post(*, overlay: Overlay, user: User, channel: str, text: str) -> str:
    _sandbox_writer(overlay=overlay, user=user)
    return _tool_call(_workspace(overlay), "post_message", {"channel": channel, "text": text})


@transaction.atomic
def sandbox_chat_reply(*, overlay: Overlay, user: User, message_id: str, text: str) -> str:
    _sandbox_writer(overlay=overlay, user=user)
    return _tool_call(_workspace(overlay), "reply_message", {"id": message_id, "text": text})


def _event_arguments(*, subject: str, start: str, end: str, all_day: bool, location: str, attendees: list[str],
                     description: str) -> dict:
    return {"subject": subject, "start": start, "end": end, "all_day": all_day, "location": location, "attendees": attendees,
            "description": description}


@transaction.atomic
def sandbox_event_create(*, overlay: Overlay, user: User, subject: str, start: str, end: str, all_day: bool = False,
                         location: str = "", attendees: list[str] | None = None, description: str = "") -> str:
    """`start` and `end`: ISO 8601 with their offset (all day: the first and the last day)."""
    _sandbox_writer(overlay=overlay, user=user)
    arguments = _event_arguments(subject=subject, start=start, end=end, all_day=all_day, location=location,
                                 attendees=attendees or [], description=description)
    return _tool_call(_workspace(overlay), "create_event", arguments)


@transaction.atomic
def sandbox_event_update(*, overlay: Overlay, user: User, event_id: str, subject: str, start: str, end: str, all_day: bool = False,
                         location: str = "", attendees: list[str] | None = None, description: str = "") -> str:
    """Replace every field of the event (a form sends them all); returns its id."""
    _sandbox_writer(overlay=overlay, user=user)
    arguments = _event_arguments(subject=subject, start=start, end=end, all_day=all_day, location=location,
                                 attendees=attendees or [], description=description)
    _tool_call(_workspace(overlay), "update_event", {"id": event_id, **arguments})
    return event_id


@transaction.atomic
def sandbox_event_delete(*, overlay: Overlay, user: User, event_id: str) -> None:
    """The agent has no tool for this; it is the overlay write delete_file makes for a file."""
    _sandbox_writer(overlay=overlay, user=user)
    if _workspace(overlay).event(event_id) is None:
        raise ApplicationError("There is no such event in this sandbox (it may have been deleted already).")
    overlay_entry_delete(overlay=overlay, path=event_id)


@transaction.atomic
def sandbox_file_write(*, overlay: Overlay, user: User, path: str, content: str) -> None:
    """Replace a file's whole content (in the conventions of its format, as write_file takes it)."""
    _sandbox_writer(overlay=overlay, user=user)
    ws = _workspace(overlay)
    if ws.get(path, DocumentKind.FILE) is None:
        raise ApplicationError("There is no such file in this sandbox (it may have been deleted).")
    _tool_call(ws, "write_file", {"path": path, "content": content})


@transaction.atomic
def sandbox_file_delete(*, overlay: Overlay, user: User, path: str) -> None:
    _sandbox_writer(overlay=overlay, user=user)
    _tool_call(_workspace(overlay), "delete_file", {"path": path})


def _free(path: str, taken) -> str:
    if not taken(path):
        return path
    stem, dot, extension = path.rpartition(".") if "." in path.rsplit("/", 1)[-1] else (path, "", "")
    for n in range(2, 1_000):
        candidate = f"{stem} ({n}){dot}{extension}"
        if not taken(candidate):
            return candidate
    raise ApplicationError(f"Too many uploads named {path!r}; choose another folder.")


@transaction.atomic
def sandbox_file_upload(*, overlay: Overlay, user: User, uploaded_file: UploadedFile, folder: str = "") -> SandboxUpload:
    """Add what an uploaded file holds to the sandbox, as the data room's upload would add it
    to the world (authoring's plan: a document becomes a file, an email its mail and
    attachments, a mailbox its messages, a calendar its events), but into the overlay. The
    original bytes are not kept: the sandbox holds each item as text, like the agent's files."""
    _sandbox_writer(overlay=overlay, user=user)
    folder = folder.strip().strip("/")
    if folder:
        folder = clean_path(folder)
    name = clean_file_name(uploaded_file.name or "")
    plan = plan_file(world=overlay.world, data=read_upload(uploaded_file), name=name, path=f"{folder}/" if folder else "")
    ws = _workspace(overlay)
    renamed: dict[str, str] = {}
    chosen: set[str] = set()

    def taken(path: str) -> bool:  # the plan knows the world's paths; the sandbox may hold more
        return path in chosen or ws.get(path) is not None or ws.world_item(path) is not None

    for planned in plan.documents:
        path = _free(planned.path, taken)
        chosen.add(path)
        if path != planned.path:
            renamed[planned.path] = path
    paths = []
    for planned in plan.documents:
        metadata = dict(planned.metadata)
        for key in ("thread", "attachments"):  # links between the items follow a renamed path
            if renamed and isinstance(metadata.get(key), str):
                metadata[key] = ", ".join(renamed.get(p.strip(), p.strip()) for p in metadata[key].split(","))
        fields = clean_document_fields(path=renamed.get(planned.path, planned.path), kind=planned.kind, format=planned.format,
                                       metadata=metadata, target_size=0)
        entry = overlay_entry_upsert(overlay=overlay, path=fields["path"], kind=fields["kind"], format=fields["format"],
                                     content=planned.content, metadata=fields["metadata"])
        paths.append(entry.path)
    return SandboxUpload(format=plan.format, paths=paths, left=plan.left)


@transaction.atomic
def overlay_entry_discard(*, overlay: Overlay, user: User, path: str) -> None:
    """Drop the sandbox's change to `path`: the world's version shows again (or, for an item
    the sandbox added, it is gone)."""
    _sandbox_writer(overlay=overlay, user=user)
    Overlay.objects.select_for_update().filter(pk=overlay.pk).first()
    if not OverlayEntry.objects.filter(overlay_id=overlay.pk, path=path).delete()[0]:
        raise ApplicationError("This change is no longer in the sandbox (it was discarded already, or replaced).")
    _touch(overlay)


@transaction.atomic
def sandbox_delete(*, overlay: Overlay, user: User) -> None:
    _sandbox_writer(overlay=overlay, user=user)
    overlay.delete()
