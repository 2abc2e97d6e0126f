import difflib

from django.db import models
from django.utils import timezone

from accounts.models import Membership, User
from accounts.selectors import membership_get
from accounts.services import require_role
from core.exceptions import ApplicationError, StaleEditError


def author_membership(*, user: User, project_id: int) -> Membership:
    membership = membership_get(user=user, project_id=project_id)
    require_role(membership, "author")
    return membership


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
        theirs_text = theirs if isinstance(theirs, str) else repr(theirs)
        mine_text = mine if isinstance(mine, str) else repr(mine)
        if theirs_text != mine_text:
            diff = "\n".join(
                difflib.unified_diff(
                    theirs_text.splitlines(), mine_text.splitlines(), "saved", "yours", lineterm="", n=1
                )
            )
            changes[name] = {"saved": theirs, "diff": diff}
    who = getattr(getattr(obj, "updated_by", None), "username", None) or "someone else"
    when = timezone.localtime(obj.updated_at).strftime("%Y-%m-%d %H:%M:%S") if getattr(obj, "updated_at", None) else ""
    raise StaleEditError(
        f"{label} was changed by {who} at {when} since you opened it (revision {base_revision} → "
        f"{obj.revision}). Your version is kept: review the changes and save again.",
        extra={"current_revision": obj.revision, "changes": changes},
    )
