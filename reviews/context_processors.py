"""What every page's top bar needs from QA: the number of unread notifications."""

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from reviews.selectors.notifications import notification_unread_count


def notifications(request: HttpRequest) -> dict:
    """`unread_notifications` for a signed-in user: one COUNT, run only if the template
    shows it (an htmx fragment that never renders the top bar costs nothing)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"unread_notifications": SimpleLazyObject(lambda: notification_unread_count(user=user))}
