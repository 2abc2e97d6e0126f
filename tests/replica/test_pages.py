"""The replica apps on a world, through the client: each screen as a full page and as the
htmx partial it swaps, showing what the agent's tools read, in the order people expect."""

import datetime as dt

import pytest
from django.urls import reverse

from authoring.models import Document
from tests import factories
from tests.replica.conftest import Page, app_url, fragment, hx
from tests.workspace.conftest import LEASE, REPLY1

W = "worlds"


# --- Drive ---------------------------------------------------------------------------------

def test_drive_shows_the_folder_tree_the_files_of_a_folder_and_a_hint(author_client, data_room):
    page = Page(author_client.get(app_url("drive", W, data_room.pk)))
    tree = [e.text for e in page.find("replica-folder", tag="a") if e.attrs.get("title")]
    assert tree == ["Board", "Deal", "Finance", "Inbox", "Legal", "Opinions"]
    assert page.find("replica-tabs")[0].text.split() == ["Drive", "7", "Mail", "4", "Chat", "4", "Calendar", "2"]
    assert "Select a file to read it here" in page.find(id="replica-viewer")[0].text
    assert not page.find(id="replica-banner")  # the world itself: no overlay banner

    listing = fragment(author_client.get(app_url("drive", W, data_room.pk, "?folder=Finance"), **hx("replica-drive")), "replica-drive")
    assert [e.text.split(" ", 1)[1] for e in listing.find("replica-file")] == ["Cap table.xlsx 2 sheets", "Payments.csv 2 rows"]
    assert [e.text for e in listing.find("is-active", tag="a")] == ["Finance"]

    legal = Page(author_client.get(app_url("drive", W, data_room.pk, "?folder=Legal")))
    files = legal.find(id="replica-files")[0]
    assert files.text.startswith("All files › Legal")
    assert [e.text for e in legal.find("replica-folder", tag="a") if not e.attrs.get("title")][1:] == ["Opinions"]  # the subfolder row


def test_drive_views_an_xlsx_with_computed_values_a_docx_and_slides(author_client, data_room):
    sheet = fragment(author_client.get(app_url("drive", W, data_room.pk, "?path=Finance/Cap table.xlsx&folder=Finance"),
                                       **hx("replica-files")),
                     "replica-files")
    cells = [e.text for e in sheet.find(tag="td")]
    assert "=B2/B4 → 60.0%" in cells and "=SUM(B2:B3) → 10,000,000" in cells
    assert [e.text for e in sheet.find("is-selected")] == ["XLS Cap table.xlsx 2 sheets"]
    cap_table = Document.objects.get(world=data_room, path="Finance/Cap table.xlsx")
    assert sheet.find(id="replica-download")[0].attrs["href"] == reverse("document-download", args=[cap_table.pk])

    doc = fragment(
        author_client.get(app_url("drive", W, data_room.pk, "?path=Deal/Letter of intent.docx"), **hx("replica-viewer")), "replica-viewer"
    )
    assert doc.find(tag="h1")[0].text == "Letter of intent"
    assert [e.text for e in doc.find(tag="td")][:2] == ["Price", "$12m"]
    deck = Page(author_client.get(app_url("drive", W, data_room.pk, "?path=Board/Q1 update.pptx")))
    assert [e.text for e in deck.find(tag="h3")][:2] == ["Slide 1: Highlights", "Slide 2: Risks"]
    assert "Mention the Northwind renewal." in deck.find(id="replica-viewer")[0].text
    assert [e.text for e in deck.find("is-active", tag="a")][-1] == "Board"  # the file's folder is opened with it


def test_drive_unknown_file_or_folder_says_so(author_client, data_room):
    page = Page(author_client.get(app_url("drive", W, data_room.pk, "?path=Deal/Nope.docx&folder=Nowhere")))
    assert "There is no file “Deal/Nope.docx” here" in page.text
    assert "There is no folder “Nowhere” here; showing all files." in page.text


def test_an_htmx_request_for_an_unknown_target_or_a_history_restore_gets_the_full_page(author_client, data_room):
    for headers in (hx("somewhere-else"), {**hx("replica-files"), "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}):
        body = author_client.get(app_url("drive", W, data_room.pk), **headers).content.decode()
        assert "<html" in body and 'id="replica-drive"' in body


def test_download_of_a_world_file_is_the_real_file_as_an_attachment(author_client, data_room):
    cap_table = Document.objects.get(world=data_room, path="Finance/Cap table.xlsx")
    response = author_client.get(reverse("document-download", args=[cap_table.pk]))
    assert response["Content-Disposition"].startswith("attachment") and response.content[:2] == b"PK"


# --- Mail ----------------------------------------------------------------------------------

def test_mail_lists_conversations_newest_first_and_reads_a_thread_in_date_order(author_client, data_room):
    page = Page(author_client.get(app_url("mail", W, data_room.pk)))
    rows = page.find("replica-conversation")
    assert [r.text for r in rows] == [
        "Tom Achterberg 25 Feb 2026 Reading lease consent See the notes attached about the Reading lease.",
        "Priya Raman, Hannah Cole 3 22 Feb 2026 RE: RE: Price Agreed, 10% escrow.",
    ]
    assert "Select a conversation" in page.find(id="replica-reading")[0].text

    box = fragment(author_client.get(app_url("mail", W, data_room.pk, f"?id={REPLY1}"), **hx("replica-mailbox")), "replica-mailbox")
    bodies = [e.text for e in box.find("replica-body")]
    assert bodies == ["What is the price?", "The price is $12m with escrow.", "Agreed, 10% escrow."]
    assert next(e.text for e in box.find("is-selected", tag="li")).startswith("Priya Raman, Hannah Cole")
    assert "Sat 21 Feb 2026, 10:30 (UTC+01:00)" in box.text  # the date as written, offset kept

    pane = fragment(author_client.get(app_url("mail", W, data_room.pk, f"?id={LEASE}"), **hx("replica-reading")), "replica-reading")
    links = [e for e in pane.elements if e.tag == "a" and "Notes.md" in e.text]
    assert links[0].attrs["href"] == app_url("drive", W, data_room.pk, "?path=Deal/Notes.md")


@pytest.mark.parametrize(("query", "expected"), [
    ("escrow", ["RE: RE: Price"]),
    ("hannah.cole", ["RE: RE: Price"]),  # a recipient's address
    ("lease consent", ["Reading lease consent"]),  # every word, anywhere
    ("Tom", ["Reading lease consent", "RE: RE: Price"]),  # sender of one, copied on the other
])
def test_mail_search(author_client, data_room, query, expected):
    box = fragment(author_client.get(app_url("mail", W, data_room.pk, f"?q={query}"), **hx("replica-mailbox")), "replica-mailbox")
    assert box.texts("replica-subject") == expected


def test_mail_search_without_results_and_an_unknown_email(author_client, data_room):
    page = Page(author_client.get(app_url("mail", W, data_room.pk, "?q=zebra&id=Mail/Nope")))
    assert "No email matches “zebra”" in page.text
    assert "That email is not in this world." in page.text


# --- Chat ----------------------------------------------------------------------------------

def test_chat_lists_channels_and_shows_a_channel_in_order_with_threads_folded(author_client, data_room):
    page = Page(author_client.get(app_url("chat", W, data_room.pk)))
    assert [e.text for e in page.find("replica-channel-link")] == ["#deal-team 3", "#finance 1"]
    assert [e.text for e in page.find("is-active", tag="a")][-1] == "#deal-team 3"  # the first channel opens by default
    top = [e for e in page.find("replica-message") if e.tag == "li" and "replica-replies" not in " ".join(e.attrs.values())]
    threads = page.find("replica-replies")
    assert len(threads) == 1 and threads[0].tag == "details" and "open" not in threads[0].attrs
    assert threads[0].text.startswith("1 reply") and "Thanks, I will ask Kestrel." in threads[0].text
    bodies = page.texts("replica-body")
    assert bodies == ["The Reading lease needs landlord consent.", "Thanks, I will ask Kestrel.", "SPA mark-up is due Friday."]
    assert len(top) == 3

    finance = fragment(author_client.get(app_url("chat", W, data_room.pk, "?channel=%23finance"), **hx("replica-chat")), "replica-chat")
    assert finance.texts("replica-body") == ["Cap table updated for the option pool."]
    assert finance.find(tag="h2")[1].text.startswith("#finance 1 message in 1 thread")

    missing = Page(author_client.get(app_url("chat", W, data_room.pk, "?channel=legal")))
    assert "There is no channel “#legal” in this world." in missing.text


# --- Calendar ------------------------------------------------------------------------------

def test_calendar_agenda_is_grouped_by_day_with_times_places_and_people(author_client, data_room):
    page = Page(author_client.get(app_url("calendar", W, data_room.pk)))
    days = [e.text for e in page.elements if e.tag == "h2" and e.text.endswith("2026")][:2]  # the agenda's day headings
    assert days == ["Wednesday 4 March 2026", "Sunday 15 March 2026"]
    events = page.texts("replica-agenda-event")
    assert events[0].startswith(
        "15:00–16:00 UTC Weekly diligence call Where Video call Who Priya Raman <p.raman@harlowfinch.com>, Hannah Cole"
    )
    assert "Open questions" in events[0]
    assert events[1].startswith("10:00–12:00 UTC Signing Where Harlow & Finch, London")


def test_calendar_week_view_and_week_picker(author_client, data_room):
    week = fragment(author_client.get(app_url("calendar", W, data_room.pk, "?view=week"), **hx("replica-calendar")), "replica-calendar")
    assert week.texts("replica-week-label") == ["2 Mar – 8 Mar 2026"]  # the week of the first event
    columns = week.find("replica-day")
    assert [c.text.split(" 1")[0] for c in columns][:2] == ["Mon 2 Mar", "Tue 3 Mar"] and len(columns) == 7
    assert columns[2].text == "Wed 4 Mar 15:00–16:00 Weekly diligence call Video call Priya Raman, Hannah Cole"
    next_link = next(e for e in week.elements if e.attrs.get("aria-label") == "Next week")
    assert next_link.attrs["href"].endswith("?view=week&week=2026-03-09")

    later = Page(author_client.get(app_url("calendar", W, data_room.pk, "?view=week&week=2026-03-11")))  # any day picks its week
    assert later.texts("replica-week-label") == ["9 Mar – 15 Mar 2026"]
    assert later.find("replica-day")[6].text == "Sun 15 Mar 10:00–12:00 Signing Harlow & Finch, London Priya Raman, Tom Achterberg"
    empty = Page(author_client.get(app_url("calendar", W, data_room.pk, "?view=week&week=2026-06-01")))
    assert "Nothing this week." in empty.text
    fallback = Page(author_client.get(app_url("calendar", W, data_room.pk, "?view=week&week=not-a-date")))
    assert fallback.texts("replica-week-label") == ["2 Mar – 8 Mar 2026"]


def test_week_cards_link_to_the_event_in_the_agenda(author_client, data_room):
    week = Page(author_client.get(app_url("calendar", W, data_room.pk, "?view=week")))
    href = week.find("replica-event", tag="a")[0].attrs["href"]
    agenda = Page(author_client.get(href.split("#")[0]))
    assert agenda.find(id=href.split("#")[1])[0].text.startswith("15:00–16:00 UTC Weekly diligence call")


# --- Empty world ---------------------------------------------------------------------------

@pytest.mark.parametrize(("app", "message"), [
    ("drive", "No files in this world yet. Add a file"),
    ("mail", "No email in this world yet. Add an email document in the world editor or draft one with a model."),
    ("chat", "No chat messages in this world yet."),
    ("calendar", "No calendar events in this world yet."),
])
def test_empty_states_say_what_to_do_next(author_client, team, app, message):
    world = factories.world(team.project, team.author, documents=0)
    page = Page(author_client.get(app_url(app, W, world.pk)))
    assert message in page.text


def test_world_editor_links_to_the_apps_and_loads_its_sandboxes(author_client, data_room):
    page = Page(author_client.get(reverse("world-editor", args=[data_room.pk])))
    links = [
        (e.text, e.attrs["href"])
        for e in page.elements
        if e.tag == "a" and e.attrs.get("href", "").startswith(f"/worlds/{data_room.pk}/apps/")
    ]
    assert links == [(app.capitalize(), app_url(app, W, data_room.pk)) for app in ("drive", "mail", "chat", "calendar")]
    section = page.find(id="replica-sandboxes")[0]
    assert section.attrs["hx-get"] == reverse("world-sandboxes", args=[data_room.pk]) and section.attrs["hx-trigger"] == "load"


def test_a_repeating_event_says_it_repeats_in_the_calendar(author_client, data_room):
    """The calendar shows a recurring event once, on its first day: it says how it repeats,
    so nobody reads a weekly call as a one-off."""
    call = data_room.documents.get(kind="event", metadata__subject="Weekly diligence call")
    Document.objects.filter(pk=call.pk).update(metadata={**call.metadata, "rrule": "FREQ=WEEKLY;COUNT=3"})
    page = Page(author_client.get(app_url("calendar", W, data_room.pk)))
    first = page.texts("replica-agenda-event")[0]
    assert "Weekly diligence call" in first
    assert "Repeats weekly, 3 times (listed here on its first day; the week view shows each occurrence)" in first
    start = dt.date.fromisoformat(call.metadata["start"][:10])
    for week in range(3):  # each occurrence in its own week, at the same time
        monday = start - dt.timedelta(days=start.weekday()) + dt.timedelta(weeks=week)
        week_page = Page(author_client.get(app_url("calendar", W, data_room.pk) + f"?view=week&week={monday.isoformat()}"))
        cards = [text for text in week_page.texts("replica-event") if "Weekly diligence call" in text]
        assert len(cards) == 1 and "Repeats weekly, 3 times" in cards[0], (week, cards)
    after = start - dt.timedelta(days=start.weekday()) + dt.timedelta(weeks=3)
    week_page = Page(author_client.get(app_url("calendar", W, data_room.pk) + f"?view=week&week={after.isoformat()}"))
    assert not [text for text in week_page.texts("replica-event") if "Weekly diligence call" in text]
