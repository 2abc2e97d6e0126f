"""Notifications: a row for the bell and, after commit, an email to whoever has an address.
Email goes through Django's email backend (the console in `make run`); a mail server that
fails never undoes the write that caused the notice."""

import logging
from collections.abc import Iterable

from django.conf import settings
from django.core.mail import send_mass_mail
from django.db import transaction
from django.utils import timezone

from accounts.models import Membership, Role, User
from reviews.models import Notification

logger = logging.getLogger(__name__)


def notify(*, recipients: Iterable[User], text: str, url: str = "", project_id: int | None = None) -> list[Notification]:
    people = {u.pk: u for u in recipients if u is not None}
    notices = Notification.objects.bulk_create(
        [Notification(recipient_id=pk, project_id=project_id, text=text[:300], url=url[:300]) for pk in people]
    )
    emails = [u.email for u in people.values() if u.email]
    if emails:
        link = f"\n\n{settings.SITE_URL.rstrip('/')}{url}" if url and getattr(settings, "SITE_URL", "") else ""
        messages = [(f"[Taskwright] {text[:120]}", f"{text}{link}", settings.DEFAULT_FROM_EMAIL, [email]) for email in emails]
        transaction.on_commit(lambda: _send(messages))
    return notices


def _send(messages: list[tuple]) -> None:
    try:
        send_mass_mail(messages, fail_silently=False)
    except Exception:  # a mail server's trouble is logged, never the user's
        logger.exception("Could not send %d notification email(s)", len(messages))


def project_people(*, project_id: int, roles: Iterable[str], exclude: Iterable[int | None] = ()) -> list[User]:
    skip = {pk for pk in exclude if pk is not None}
    return [m.user for m in Membership.objects.filter(project_id=project_id, role__in=list(roles)).select_related("user")
            if m.user_id not in skip and m.user.is_active]


def project_reviewers(*, project_id: int, exclude: Iterable[int | None] = ()) -> list[User]:
    return project_people(project_id=project_id, roles=[Role.REVIEWER, Role.ADMIN], exclude=exclude)


def project_admins(*, project_id: int, exclude: Iterable[int | None] = ()) -> list[User]:
    return project_people(project_id=project_id, roles=[Role.ADMIN], exclude=exclude)


def notifications_mark_read(*, user: User, pk: int | None = None) -> int:
    """Mark one of the user's notices read, or all of them (pk None). Returns how many changed."""
    unread = Notification.objects.filter(recipient=user, read_at__isnull=True)
    if pk is not None:
        unread = unread.filter(pk=pk)
    return unread.update(read_at=timezone.now())
