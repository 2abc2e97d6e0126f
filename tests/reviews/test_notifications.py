"""Notifications: the bell with its unread count on every page, the list, marking read (one
or all, page and htmx), the API, and the email an author gets when a decision arrives."""

import html
from datetime import timedelta

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from reviews.models import Decision, Notification
from reviews.selectors import checklist_items
from reviews.services import ChecklistMark, notify, review_decide, submission_claim_next, submission_create


def text(response) -> str:
    return html.unescape(response.content.decode())


def notices(user, n: int, project=None) -> list[Notification]:
    now = timezone.now()
    made = [notify(recipients=[user], text=f"Notice number {i:02d}", url="/reviews/", project_id=project.pk if project else None)[0]
            for i in range(n)]
    for i, notice in enumerate(made):  # one a minute, so "newest first" is unambiguous
        Notification.objects.filter(pk=notice.pk).update(created_at=now - timedelta(minutes=n - i))
    return made


def test_the_bell_shows_the_unread_count_on_every_page(client, team):
    client.force_login(team.author)
    page = text(client.get(reverse("dashboard")))
    assert 'aria-label="Notifications, none unread"' in page
    oldest = notices(team.author, 3)[0]
    notices(team.reviewer, 2)  # someone else's do not count
    Notification.objects.filter(pk=oldest.pk).update(read_at=timezone.now())  # a read one does not count
    page = text(client.get(reverse("project-detail", args=[team.project.pk])))
    assert 'aria-label="Notifications, 2 unread"' in page
    assert f'href="{reverse("notifications")}"' in page
    bell = client.get(reverse("notifications"), {"bell": "1"}, HTTP_HX_REQUEST="true")
    assert text(bell).startswith('<a id="notification-bell"') and "2 unread" in text(bell)


def test_the_bell_costs_one_count_query(client, team):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(team.author)
    notices(team.author, 1)
    with CaptureQueriesContext(connection) as page:
        client.get(reverse("dashboard"))
    counts = [q["sql"] for q in page.captured_queries if "reviews_notification" in q["sql"]]
    assert len(counts) == 1 and "COUNT(" in counts[0].upper()


def test_the_list_is_newest_first_with_unread_marked_and_paginated(client, team):
    notices(team.author, 35)
    Notification.objects.filter(recipient=team.author, text="Notice number 33").update(read_at=timezone.now())
    client.force_login(team.author)
    page = text(client.get(reverse("notifications")))
    assert page.index("Notice number 34") < page.index("Notice number 33") < page.index("Notice number 10")
    assert "Notice number 04" not in page  # 30 a page
    assert "<strong>Notice number 34</strong>" in page and "<strong>Notice number 33</strong>" not in page  # read: not bold
    assert "Page 1 of 2" in page and "Mark all as read" in page
    older = client.get(reverse("notifications"), {"page": 2}, HTTP_HX_REQUEST="true")
    assert text(older).lstrip().startswith('<section class="card" id="notification-list">') and "Notice number 04" in text(older)


def test_an_empty_list_says_what_will_appear(client, team):
    client.force_login(team.reviewer)
    assert "No notifications yet" in text(client.get(reverse("notifications")))


def test_marking_one_read_with_htmx_returns_the_list_and_tells_the_bell(client, team):
    first, second = notices(team.author, 2)
    client.force_login(team.author)
    response = client.post(reverse("notifications-read"), {"pk": first.pk}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response["HX-Trigger"] == "notifications-changed"
    assert text(response).lstrip().startswith('<section class="card" id="notification-list">')
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.read_at is not None and second.read_at is None
    assert "<strong>Notice number 00</strong>" not in text(response) and "<strong>Notice number 01</strong>" in text(response)


def test_marking_all_read_without_htmx_redirects_to_the_list(client, team):
    notices(team.author, 3)
    mine_elsewhere = notices(team.reviewer, 1)[0]
    client.force_login(team.author)
    response = client.post(reverse("notifications-read"))
    assert response.status_code == 302 and response["Location"] == reverse("notifications")
    assert not Notification.objects.filter(recipient=team.author, read_at__isnull=True).exists()
    mine_elsewhere.refresh_from_db()
    assert mine_elsewhere.read_at is None  # "all" means all of the user's own
    assert 'aria-label="Notifications, none unread"' in text(client.get(reverse("notifications")))


def test_another_users_notification_cannot_be_marked_read(client, team):
    theirs = notices(team.reviewer, 1)[0]
    client.force_login(team.author)
    assert client.post(reverse("notifications-read"), {"pk": theirs.pk}, HTTP_HX_REQUEST="true").status_code == 404
    assert client.post("/api/notifications/read/", {"id": theirs.pk}, content_type="application/json").status_code == 404
    assert client.post(reverse("notifications-read"), {"pk": "1; DROP"}).status_code == 400
    theirs.refresh_from_db()
    assert theirs.read_at is None
    assert client.get("/api/notifications/").json()["count"] == 0  # nor seen


def test_the_api_lists_unread_and_marks_read(client, team):
    first, second, third = notices(team.author, 3, project=team.project)
    Notification.objects.filter(pk=first.pk).update(read_at=timezone.now())
    client.force_login(team.author)
    listed = client.get("/api/notifications/").json()
    assert [n["text"] for n in listed["results"]] == ["Notice number 02", "Notice number 01", "Notice number 00"]
    unread = client.get("/api/notifications/", {"unread": "true"}).json()
    assert [n["id"] for n in unread["results"]] == [third.pk, second.pk]
    assert client.get("/api/notifications/", {"unread": "maybe"}).status_code == 400
    assert client.get("/api/notifications/", {"seen": "no"}).status_code == 400
    one = client.post("/api/notifications/read/", {"id": second.pk}, content_type="application/json").json()
    assert one == {"marked": 1, "unread": 1}
    assert client.post("/api/notifications/read/", {}, content_type="application/json").json() == {"marked": 1, "unread": 0}


@pytest.mark.parametrize("decision", [Decision.APPROVE, Decision.REQUEST_CHANGES])
def test_a_final_decision_emails_the_author_and_rings_the_bell(client, settings, team, env_task, decision,
                                                               django_capture_on_commit_callbacks):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.SITE_URL = "https://taskwright.example"
    submission = submission_create(env_task=env_task, user=team.author)
    assert submission_claim_next(user=team.reviewer) == submission
    items = checklist_items(project_id=team.project.pk)
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        review_decide(submission=submission, user=team.reviewer, decision=decision, comment="Tighten criterion 2.",
                      checklist=[ChecklistMark(item.pk, True) for item in items])
    to_author = [m for m in mail.outbox if m.to == [team.author.email]]
    assert len(to_author) == 1
    word = "approved" if decision == Decision.APPROVE else "changes requested"
    assert word in to_author[0].subject and env_task.title in to_author[0].subject
    assert f"https://taskwright.example{reverse('submission-review', args=[submission.pk])}" in to_author[0].body
    assert not [m for m in mail.outbox if team.reviewer.email in m.to]  # the reviewer is not told of their own decision
    client.force_login(team.author)
    page = text(client.get(reverse("notifications")))
    assert 'aria-label="Notifications, 1 unread"' in page and word in page


def test_opening_a_notice_marks_it_read_and_follows_its_link(client, team):
    """The bell stayed at its count after every notice was opened: opening now reads it."""
    first, second = notices(team.author, 2)
    Notification.objects.filter(pk=first.pk).update(url="/reviews/")
    Notification.objects.filter(pk=second.pk).update(url="//elsewhere.example/")
    client.force_login(team.author)
    listing = text(client.get(reverse("notifications")))
    assert f'href="{reverse("notification-open", args=[first.pk])}">Open</a>' in listing
    opened = client.get(reverse("notification-open", args=[first.pk]))
    assert (opened.status_code, opened["Location"]) == (302, "/reviews/")
    first.refresh_from_db()
    assert first.read_at is not None
    # Only a path on this site is followed; another user's notice is not found.
    assert client.get(reverse("notification-open", args=[second.pk]))["Location"] == reverse("notifications")
    Notification.objects.filter(pk=second.pk).update(url="/\\elsewhere.example/")  # (browsers read /\ as //)
    assert client.get(reverse("notification-open", args=[second.pk]))["Location"] == reverse("notifications")
    other = notices(team.reviewer, 1)[0]
    assert client.get(reverse("notification-open", args=[other.pk])).status_code == 404
    other.refresh_from_db()
    assert other.read_at is None
