"""The user's own notifications: nobody reads or marks another user's."""

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from accounts.models import User
from reviews.models import Notification


def notification_list_for_user(*, user: User, unread_only: bool = False) -> QuerySet[Notification]:
    """Newest first."""
    notices = Notification.objects.filter(recipient=user).order_by("-created_at", "-id")
    return notices.filter(read_at__isnull=True) if unread_only else notices


def notification_get_for_user(*, user: User, pk: int) -> Notification:
    """One of the user's notifications; 404 for anyone else's."""
    return get_object_or_404(Notification, recipient=user, pk=pk)


def notification_unread_count(*, user: User) -> int:
    return Notification.objects.filter(recipient=user, read_at__isnull=True).count()
