import hashlib

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils.text import slugify

from accounts.models import Membership, Project, Role, User
from core.exceptions import ApplicationError, PermissionRefused


def require_role(membership: Membership, capability: str) -> None:
    """Raise PermissionRefused unless the membership carries `capability`
    (one of "author", "review", "export", "administer")."""
    allowed = {
        "author": membership.can_author,
        "review": membership.can_review,
        "export": membership.can_export,
        "administer": membership.can_export,
    }[capability]
    if not allowed:
        verb = {"author": "edit content", "review": "review tasks", "export": "build packs",
                "administer": "change the project's review settings"}[capability]
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
