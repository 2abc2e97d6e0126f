import hashlib

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils.text import slugify

from accounts.models import Membership, Project, Role, User
from core.exceptions import ApplicationError, PermissionRefused


def require_role(membership: Membership, capability: str) -> None:
    """Raise PermissionRefused unless the membership carries `capability`
    (one of "author", "review", "export", "administer", "administer_members", "import")."""
    allowed = {
        "author": membership.can_author,
        "review": membership.can_review,
        "export": membership.can_export,
        "administer": membership.can_export,
        "administer_members": membership.can_export,
        "import": membership.can_export,
    }[capability]
    if not allowed:
        verb = {"author": "edit content", "review": "review tasks", "export": "build packs",
                "administer": "change the project's review settings", "administer_members": "change the project's members",
                "import": "import packs"}[capability]
        raise PermissionRefused(f"Your role in this project ({membership.role}) cannot {verb}.")


def api_token_issue(*, user: User) -> str:
    """The user's API token, created on first request (one per user)."""
    from rest_framework.authtoken.models import Token

    token, _ = Token.objects.get_or_create(user=user)
    return token.key


@transaction.atomic
def project_create(*, name: str, created_by: User, description: str = "", slug: str = "") -> Project:
    project = Project.objects.create(name=name, slug=slug or slugify(name)[:80], description=description)
    Membership.objects.create(project=project, user=created_by, role=Role.ADMIN)
    return project


@transaction.atomic
def membership_set(*, project: Project, user: User, role: str) -> Membership:
    if role not in Role.values:
        raise ApplicationError(f"Unknown role {role!r}; choose one of {', '.join(Role.values)}.")
    membership, _ = Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    return membership


# --- Members, managed by a project's admins ------------------------------------------------
# Accounts themselves are made by a site administrator (Django's admin at /admin/); a
# project's admins add existing accounts, change roles and remove members. A project
# always keeps one admin. Every change is a line in the project's audit trail.

ROLE_WORDS = {Role.AUTHOR: "author", Role.REVIEWER: "reviewer", Role.ADMIN: "admin"}


def _require_admin(project_id: int, by: User) -> None:
    membership = Membership.objects.filter(project_id=project_id, user=by).first()
    if membership is None:
        raise PermissionRefused("You are not a member of this project.")
    require_role(membership, "administer_members")


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise ApplicationError(f"Choose a role: {', '.join(Role.values)}.")


def _audit(*, project_id: int, actor: User, summary: str, data: dict) -> None:
    # reviews owns the audit trail and depends on accounts: imported here, not at the top.
    from reviews.models import AuditVerb
    from reviews.services.audit import audit_record

    audit_record(project_id=project_id, verb=AuditVerb.MEMBERS_CHANGED, summary=summary, actor=actor, data=data)


def _lock_admins(project_id: int) -> list[int]:
    """The project's admins' membership ids, their rows locked: two admins demoting each
    other at once cannot leave the project with none."""
    return list(Membership.objects.select_for_update().filter(project_id=project_id, role=Role.ADMIN)
                .order_by("pk").values_list("pk", flat=True))


@transaction.atomic
def member_add(*, project: Project, by: User, identifier: str, role: str) -> Membership:
    """Add an existing account, named by its user name or email, with `role`."""
    _lock_admins(project.pk)
    _require_admin(project.pk, by)
    _check_role(role)
    user = _account_named(identifier.strip())
    existing = Membership.objects.filter(project=project, user=user).first()
    if existing is not None:
        raise ApplicationError(f"{user.username} is already a member here ({existing.get_role_display().lower()}): "
                               "change their role in the list instead.")
    membership = Membership.objects.create(project=project, user=user, role=role)
    _audit(project_id=project.pk, actor=by, summary=f"Added {user.username} as {ROLE_WORDS[role]}",
           data={"user": user.username, "role": role})
    return membership


def _account_named(identifier: str) -> User:
    """The active account with this user name (exactly, then whatever the case) or email."""
    if not identifier:
        raise ApplicationError("Give the user name or email of the account to add.")
    active = User.objects.filter(is_active=True)
    for lookup in ({"username": identifier}, {"username__iexact": identifier}, {"email__iexact": identifier}):
        matches = list(active.filter(**lookup)[:2])
        if len(matches) == 1:
            return matches[0]
        if matches:
            what = "email" if "email__iexact" in lookup else "user name, in different cases"
            raise ApplicationError(f"Several accounts have the {what} “{identifier[:80]}”: give the exact user name instead.")
    raise ApplicationError(f"No account has the user name or email “{identifier[:80]}”. Accounts are made by a site "
                           "administrator (the Django admin at /admin/); ask them, then add it here.")


def _still_there(membership: Membership) -> Membership:
    current = Membership.objects.select_related("user").filter(pk=membership.pk).first()
    if current is None:
        raise ApplicationError("This member was removed from the project meanwhile; reload the page.")
    return current


@transaction.atomic
def member_role_change(*, membership: Membership, by: User, role: str) -> Membership:
    _check_role(role)
    admins = _lock_admins(membership.project_id)
    _require_admin(membership.project_id, by)  # after the lock: an admin demoted meanwhile is refused
    membership = _still_there(membership)
    if membership.role == role:
        return membership
    if membership.role == Role.ADMIN and admins == [membership.pk]:
        raise ApplicationError(f"{membership.user.username} is this project's only admin: make someone else admin first.")
    before = membership.role
    membership.role = role
    membership.save(update_fields=["role", "updated_at"])
    _audit(project_id=membership.project_id, actor=by,
           summary=f"Changed {membership.user.username} from {ROLE_WORDS[before]} to {ROLE_WORDS[role]}",
           data={"user": membership.user.username, "from": before, "to": role})
    return membership


@transaction.atomic
def member_remove(*, membership: Membership, by: User) -> None:
    admins = _lock_admins(membership.project_id)
    _require_admin(membership.project_id, by)  # after the lock: an admin demoted meanwhile is refused
    membership = _still_there(membership)
    if admins == [membership.pk]:
        raise ApplicationError(f"{membership.user.username} is this project's only admin: make someone else admin first.")
    username, role, project_id = membership.user.username, membership.role, membership.project_id
    membership.delete()
    _audit(project_id=project_id, actor=by, summary=f"Removed {username} ({ROLE_WORDS[role]})",
           data={"user": username, "role": role})


def api_token_revoke(*, user: User) -> bool:
    """Delete the user's API token (the next request for one makes a new one). Whether there was one."""
    from rest_framework.authtoken.models import Token

    return Token.objects.filter(user=user).delete()[0] > 0


# --- Sign-in limits ---------------------------------------------------------------------
# Failed sign-ins are counted in the default cache (Redis with several web processes or
# hosts), on the sign-in page and the token API alike, so either door counts against one
# limit: per address and user name (LOGIN_RATE_LIMIT: guessing one user's password) and per
# address alone (LOGIN_ADDRESS_RATE_LIMIT: one password tried against many user names).

LOGIN_REFUSED_MESSAGE = "Too many failed sign-in attempts. Wait 15 minutes and try again."


def login_failure_keys(*, address: str, username: str) -> tuple[str, str]:
    """The cache keys of the two counts. The user name is hashed: whatever was typed
    (spaces, control characters, any length) makes a key every cache backend takes."""
    name = hashlib.sha256(username.lower().encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"login-failures:{address}:{name}", f"login-failures:{address}"


def login_allowed(*, address: str, username: str) -> bool:
    """False once either limit is reached: then even the right password is refused, so
    guessing on gains nothing."""
    per_name, per_address = login_failure_keys(address=address, username=username)
    counts = cache.get_many([per_name, per_address])
    return counts.get(per_name, 0) < settings.LOGIN_RATE_LIMIT[0] and counts.get(per_address, 0) < settings.LOGIN_ADDRESS_RATE_LIMIT


def login_failure_record(*, address: str, username: str) -> None:
    window = settings.LOGIN_RATE_LIMIT[1]
    for key in login_failure_keys(address=address, username=username):
        cache.add(key, 0, window)  # the window starts at the first failure
        try:
            cache.incr(key)  # atomic on Redis: concurrent failures all count
        except ValueError:  # expired between add and incr
            cache.set(key, 1, window)
