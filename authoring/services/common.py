import difflib
import json

from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.utils import timezone

from accounts.models import Membership, User
from accounts.selectors import membership_get
from accounts.services import require_role
from core.exceptions import ApplicationError, StaleEditError
from core.textdiff import text_diff


def author_membership(*, user: User, project_id: int) -> Membership:
    membership = membership_get(user=user, project_id=project_id)
    require_role(membership, "author")
    return membership


def _readable(value: object) -> str:
    """A field's value as a person reads it: text as it is, the facts sheet as "key: value"
    lines, anything else as indented JSON (never a Python repr)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, dict) and set(v) <= {"key", "value"} for v in value):
        return "\n".join(f"{v.get('key', '')}: {v.get('value', '')}" for v in value)
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def _field_label(obj: models.Model, name: str) -> str:
    """What the page calls a field ("Reference answer", never "reference_answer")."""
    try:
        return str(obj._meta.get_field(name).verbose_name).capitalize()
    except FieldDoesNotExist:
        return name.replace("_", " ").capitalize()


def check_revision(*, obj: models.Model, base_revision: int | None, fields: dict[str, str], label: str) -> None:
    """Refuse a save based on an older revision than the one stored.

    `fields` maps field name → the value the user is trying to save; the error carries,
    per changed field, the stored value and a diff against the user's text, so the page
    can show what changed and keep what the user typed.
    """
    if base_revision is None:
        raise ApplicationError(
            f"{label} was saved without saying which revision it was based on; reload the page and try again."
        )
    if int(base_revision) == obj.revision:
        return
    changes = {}
    for name, mine in fields.items():
        theirs = getattr(obj, name)
        theirs_text, mine_text = _readable(theirs), _readable(mine)
        if theirs_text != mine_text:
            diff = "\n".join(
                difflib.unified_diff(
                    theirs_text.splitlines(), mine_text.splitlines(), "saved", "yours", lineterm="", n=1
                )
            )
            # `diff` for API clients; `html` for the page: the saved text with what yours
            # changes marked, word by word (escaped; <ins> and <del> only).
            changes[name] = {"saved": theirs, "diff": diff, "html": text_diff(theirs_text, mine_text)["html"],
                             "label": _field_label(obj, name)}
    who = getattr(getattr(obj, "updated_by", None), "username", None) or "someone else"
    when = timezone.localtime(obj.updated_at).strftime("%Y-%m-%d %H:%M:%S") if getattr(obj, "updated_at", None) else ""
    raise StaleEditError(
        f"{label} was changed by {who} at {when} since you opened it (revision {base_revision} → "
        f"{obj.revision}). Your version is kept: review the changes and save again.",
        extra={"current_revision": obj.revision, "changes": changes, "model": obj._meta.label_lower},
    )
