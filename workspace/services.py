"""Every write of the workspace app: overlays, and the entries tools write into them.
The authored world is never touched here: an overlay entry shadows, adds or hides a
data-room path, and only in its own overlay."""

from django.db import transaction
from django.utils import timezone

from accounts.models import User
from authoring.models import Document, DocumentFormat, DocumentKind, World
from authoring.rendering.headers import EMAIL
from authoring.services.common import author_membership
from authoring.services.documents import MAX_CONTENT_CHARS, clean_path
from core.exceptions import ApplicationError
from core.validation import reject_unstorable
from workspace.models import DEFAULT_ACTOR_EMAIL, DEFAULT_ACTOR_NAME, Overlay, OverlayAction, OverlayEntry, OverlayPurpose

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
    actor_name: str | None = None, actor_email: str | None = None,
) -> Overlay:
    author_membership(user=user, project_id=world.project_id)
    _check_purpose(purpose)
    label = _clean_label(label)
    actor_name, actor_email = _clean_actor(actor_name, actor_email)
    return Overlay.objects.create(
        world=world, label=label, purpose=purpose, actor_name=actor_name, actor_email=actor_email,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


@transaction.atomic
def overlays_create(*, world: World, user: User, labels: list[str], purpose: str) -> list[Overlay]:
    """One overlay per label, with the default actor, in one statement (a batch of trial
    rollouts gets its overlays when it starts, not one by one on the workers)."""
    author_membership(user=user, project_id=world.project_id)
    _check_purpose(purpose)
    labels = [_clean_label(label) for label in labels]
    created_by = user if getattr(user, "is_authenticated", False) else None
    return Overlay.objects.bulk_create(Overlay(world=world, label=label, purpose=purpose, created_by=created_by) for label in labels)


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


@transaction.atomic
def overlay_entry_upsert(*, overlay: Overlay, path: str, kind: str, format: str, content: str, metadata: dict) -> OverlayEntry:
    """Create or replace the overlay's state of `path` (the world's item, if any, is shadowed)."""
    path = clean_path(path)
    if kind not in DocumentKind.values or (kind == DocumentKind.FILE) != bool(format) or (format and format not in DocumentFormat.values):
        raise ApplicationError(f"Cannot store a {kind!r} item with format {format!r}.")
    if len(content) > MAX_CONTENT_CHARS:
        raise ApplicationError(f"The content is too long ({len(content):,} characters; at most {MAX_CONTENT_CHARS:,}).")
    reject_unstorable(content, label="The content")
    reject_unstorable(metadata, label="The metadata")
    _check_room(overlay, path)
    _touch(overlay)
    entry, _ = OverlayEntry.objects.update_or_create(
        overlay=overlay, path=path,
        defaults={"kind": kind, "format": format, "action": OverlayAction.UPSERT, "content": content, "metadata": metadata},
    )
    return entry


@transaction.atomic
def overlay_entry_delete(*, overlay: Overlay, path: str) -> OverlayEntry | None:
    """Hide `path`. A path the world holds gets a delete entry; a path only the overlay
    added loses its entry (None is returned): the world never had it."""
    path = clean_path(path)
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
