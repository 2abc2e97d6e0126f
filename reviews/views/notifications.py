"""Notifications: the list (newest first, unread marked), marking one or all read, and the
bell in the top bar (base.html#notification-bell), which reloads itself when a page says
the count changed (the `notifications-changed` event)."""

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from reviews.selectors.notifications import notification_get_for_user, notification_list_for_user
from reviews.services import notifications_mark_read

PAGE = "reviews/notifications.html"
PAGE_SIZE = 30


def _context(request: HttpRequest, page_number: str | None) -> dict:
    page = Paginator(notification_list_for_user(user=request.user), PAGE_SIZE).get_page(page_number)
    return {"page": page, "notices": page.object_list}


@require_GET
def notification_list(request: HttpRequest) -> HttpResponse:
    if request.htmx and request.GET.get("bell"):
        return render(request, "base.html#notification-bell")
    template = f"{PAGE}#notification-list" if request.htmx else PAGE
    return render(request, template, _context(request, request.GET.get("page")))


@require_POST
def notifications_read(request: HttpRequest) -> HttpResponse:
    """POST pk: mark that one read (it must be the user's: 404 otherwise); no pk: all of them."""
    raw = request.POST.get("pk", "").strip()
    pk = None
    if raw:
        if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
            return HttpResponseBadRequest("pk must be a notification's number.")
        pk = notification_get_for_user(user=request.user, pk=int(raw)).pk
    notifications_mark_read(user=request.user, pk=pk)
    page_number = request.POST.get("page")
    if not request.htmx:
        url = reverse("notifications")
        return redirect(f"{url}?page={page_number}" if page_number and page_number.isdigit() else url)
    response = render(request, f"{PAGE}#notification-list", _context(request, page_number))
    response["HX-Trigger"] = "notifications-changed"
    return response


@require_GET
def notification_open(request: HttpRequest, pk: int) -> HttpResponse:
    """Follow a notice's link, marking it read on the way (as opening a mail does). Only a
    path on this site is followed; the notice must be the user's (404 otherwise)."""
    notice = notification_get_for_user(user=request.user, pk=pk)
    notifications_mark_read(user=request.user, pk=notice.pk)
    local = notice.url.startswith("/") and url_has_allowed_host_and_scheme(notice.url, allowed_hosts={request.get_host()})
    return redirect(notice.url if local else reverse("notifications"))
