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
