from django.db import transaction
from django.db.models import F

from accounts.models import User
from authoring.models import World
from authoring.services.common import author_membership, check_revision
from core.exceptions import ApplicationError
from core.validation import reject_unstorable

MAX_OUTLINE_CHARS = 200_000
MAX_FACTS = 500


def clean_facts(facts: object) -> list[dict[str, str]]:
    """Facts are key/value rows; blank rows are dropped, anything else is refused."""
    if not isinstance(facts, list):
        raise ApplicationError("Facts must be a list of {key, value} rows.")
    reject_unstorable(facts, label="The facts sheet")
    if len(facts) > MAX_FACTS:
        raise ApplicationError(f"At most {MAX_FACTS} facts per world.")
    rows = []
    for i, row in enumerate(facts, start=1):
        if not isinstance(row, dict) or not isinstance(row.get("key", ""), str) or not isinstance(row.get("value", ""), str):
            raise ApplicationError(f"Fact {i} must have a text key and a text value.")
        key, value = row.get("key", "").strip(), row.get("value", "").strip()
        if not key and not value:
            continue
        if not key:
            raise ApplicationError(f"Fact {i} has a value but no key.")
        if len(key) > 200 or len(value) > 2000:
            raise ApplicationError(f"Fact {i} is too long (key ≤ 200, value ≤ 2000 characters).")
        rows.append({"key": key, "value": value})
    return rows


def _clean_world_fields(title: str, outline: str) -> tuple[str, str]:
    title = (title or "").strip()
    if not title:
        raise ApplicationError("A world needs a title.")
    if len(title) > 200:
        raise ApplicationError("The title is too long (200 characters at most).")
    if len(outline or "") > MAX_OUTLINE_CHARS:
        raise ApplicationError(f"The outline is too long ({MAX_OUTLINE_CHARS:,} characters at most).")
    return title, outline or ""


@transaction.atomic
def world_create(*, project_id: int, user: User, title: str, outline: str = "", facts: list | None = None) -> World:
    author_membership(user=user, project_id=project_id)
    title, outline = _clean_world_fields(title, outline)
    return World.objects.create(
        project_id=project_id,
        title=title,
        outline=outline,
        facts=clean_facts(facts or []),
        created_by=user,
        updated_by=user,
    )


@transaction.atomic
def world_update(
    *, world: World, user: User, title: str, outline: str, facts: list, base_revision: int | None
) -> World:
    author_membership(user=user, project_id=world.project_id)
    title, outline = _clean_world_fields(title, outline)
    facts = clean_facts(facts)
    world = World.objects.select_for_update().get(pk=world.pk)
    check_revision(obj=world, base_revision=base_revision, fields={"title": title, "outline": outline, "facts": facts}, label="This world")
    world.title, world.outline, world.facts, world.updated_by = title, outline, facts, user
    world.revision = F("revision") + 1
    world.save(update_fields=["title", "outline", "facts", "updated_by", "revision", "updated_at"])
    world.refresh_from_db()
    return world
