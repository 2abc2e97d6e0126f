"""Uploads keep what a file holds (issue 17, "Wrong today" 5): a calendar becomes its
events, an email's attachments become files linked from the mail, a mailbox becomes its
messages with threads, and whatever cannot be kept is reported, on the page and by the
API. Real files, written with icalendar and the standard library's email and mailbox."""

import datetime as dt
import io
import mailbox
import zipfile
import zoneinfo
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import format_datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from icalendar import Alarm, Calendar, Event, vCalAddress, vText
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from authoring.models import Document
from authoring.services.uploads import documents_upload
from authoring.services.world_transfer import world_export
from core.exceptions import ApplicationError
from tests import factories
from tests.uploads import builders
from tests.uploads.test_upload_service import media, stored_files  # noqa: F401 -- the fixture

LONDON = zoneinfo.ZoneInfo("Europe/London")
UTC = dt.UTC


# --- files, as the tools that write them write them ---------------------------------------

def _attendee(email: str, name: str, partstat: str = "") -> vCalAddress:
    attendee = vCalAddress(f"mailto:{email}")
    attendee.params["cn"] = vText(name)
    if partstat:
        attendee.params["partstat"] = vText(partstat)
    return attendee


def calendar_bytes() -> bytes:
    cal = Calendar()
    cal.add("prodid", "-//Harlow LLP//Deal calendar//EN")
    cal.add("version", "2.0")
    weekly = Event()
    weekly.add("uid", "weekly-call@harlow.example")
    weekly.add("dtstamp", dt.datetime(2026, 1, 1, tzinfo=UTC))
    weekly.add("summary", "Weekly deal call")
    weekly.add("dtstart", dt.datetime(2026, 1, 12, 9, 0, tzinfo=LONDON))
    weekly.add("dtend", dt.datetime(2026, 1, 12, 9, 30, tzinfo=LONDON))
    weekly.add("rrule", {"freq": "weekly", "count": 6})
    weekly.add("exdate", [dt.datetime(2026, 1, 19, 9, 0, tzinfo=LONDON)])
    weekly.add("location", "Room 4")
    weekly.add("description", "Status of the SPA and the disclosure letter.")
    weekly.add("attendee", _attendee("ann@harlow.example", "Ann Lévy", "ACCEPTED"), encode=False)
    weekly.add("attendee", _attendee("ben@beta.example", "Ben Osei", "DECLINED"), encode=False)
    weekly.add("attendee", _attendee("not an address", "Somebody"), encode=False)
    weekly.add("organizer", _attendee("priya@harlow.example", "Priya Raman"), encode=False)
    reminder = Alarm()
    reminder.add("action", "DISPLAY")
    reminder.add("trigger", dt.timedelta(minutes=-15))
    reminder.add("description", "Call in 15 minutes")
    weekly.add_component(reminder)
    cal.add_component(weekly)
    signing = Event()
    signing.add("uid", "signing@harlow.example")
    signing.add("dtstamp", dt.datetime(2026, 1, 1, tzinfo=UTC))
    signing.add("summary", "Signing day")
    signing.add("dtstart", dt.date(2026, 2, 15))
    signing.add("dtend", dt.date(2026, 2, 16))
    signing.add("description", "x" * 9_000)  # longer than calendars take
    cal.add_component(signing)
    someday = Event()
    someday.add("uid", "someday@harlow.example")
    someday.add("dtstamp", dt.datetime(2026, 1, 1, tzinfo=UTC))
    someday.add("summary", "Lunch some day")
    cal.add_component(someday)
    cal.add_missing_timezones()
    return cal.to_ical()


def message(subject: str, when: dt.datetime, *, sender: str = "Hannah Cole <hannah.cole@beta.example>",
            to: str = "Priya Raman <priya@harlow.example>", body: str = "", msg_id: str = "", reply_to: list[str] | None = None,
            ) -> EmailMessage:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"], msg["Date"] = sender, to, subject, format_datetime(when)
    if msg_id:
        msg["Message-ID"] = msg_id
    if reply_to:
        msg["In-Reply-To"] = reply_to[-1]
        msg["References"] = " ".join(reply_to)
    msg.set_content(body or f"{subject}: see attached.\n")
    return msg


SPA_DOCX = builders.docx_bytes()


def mail_with_attachments() -> bytes:
    msg = message("Northwind SPA, signing version", dt.datetime(2026, 2, 10, 9, 0, tzinfo=UTC), msg_id="<spa-1@beta.example>",
                  body="Priya,\n\nThe signing version and the cap table are attached.\n\nHannah\n")
    msg.add_attachment(SPA_DOCX, maintype="application", subtype="octet-stream", filename="SPA, signing version.docx")
    msg.add_attachment(b"Holder,Shares\nFounders,6000000\n", maintype="text", subtype="csv", filename="Cap table.csv")
    msg.add_attachment(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, maintype="image", subtype="png", filename="signature.png")
    forwarded = message("Fwd: board approval", dt.datetime(2026, 2, 9, 17, 0, tzinfo=UTC), body="The board approved.\n")
    msg.add_attachment(forwarded)
    return msg.as_bytes()


def mbox_bytes() -> bytes:
    """A thread of three (root, reply, reply to the reply), one message on its own, and the
    root again (a mailbox often holds a message twice)."""
    root = message("Escrow terms", dt.datetime(2026, 1, 5, 9, 0, tzinfo=UTC), msg_id="<escrow-1@beta.example>",
                   body="Escrow of 10% for 18 months?\n")
    reply = message("Re: Escrow terms", dt.datetime(2026, 1, 5, 11, 0, tzinfo=UTC), sender="Priya Raman <priya@harlow.example>",
                    to="Hannah Cole <hannah.cole@beta.example>", msg_id="<escrow-2@harlow.example>",
                    reply_to=["<escrow-1@beta.example>"], body="12 months, not 18.\n")
    again = message("Re: Escrow terms", dt.datetime(2026, 1, 6, 8, 0, tzinfo=UTC), msg_id="<escrow-3@beta.example>",
                    reply_to=["<escrow-1@beta.example>", "<escrow-2@harlow.example>"], body="Agreed: 12 months.\n")
    alone = message("Board pack", dt.datetime(2026, 1, 7, 8, 0, tzinfo=UTC), msg_id="<board@beta.example>")
    alone.add_attachment(b"# Board pack\n\nThe price is $12m.\n", maintype="text", subtype="markdown", filename="Board pack.md")
    out = io.BytesIO()
    for msg in (root, reply, again, alone, root):
        out.write(b"From hannah.cole@beta.example Mon Jan  5 09:00:00 2026\n")
        out.write(msg.as_bytes(policy=policy.default.clone(linesep="\n")))
        out.write(b"\n")
    return out.getvalue()


@pytest.fixture
def room(team):
    """An empty world (a skeleton would stop the export)."""
    return factories.world(team.project, team.author, documents=0)


def upload_page(client, world, *files: tuple[str, bytes], htmx: bool = True):
    sent = [SimpleUploadedFile(name, data, "application/octet-stream") for name, data in files]
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(reverse("world-upload", args=[world.pk]), {"files": sent}, **headers)


def api_for(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return api


# --- calendar -------------------------------------------------------------------------------

def test_a_calendar_becomes_its_events_keeping_repeats_all_day_zones_and_attendees(client, team, room, media):  # noqa: F811
    client.force_login(team.author)
    response = upload_page(client, room, ("Deal calendar.ics", calendar_bytes()))
    assert response.status_code == 200 and response["HX-Trigger"] == "data-room-changed"
    page = response.content.decode()
    assert 'id="upload-report"' in page and "<html" not in page  # the fragment only

    events = {d.path: d for d in room.documents.filter(kind="event")}
    assert set(events) == {"Uploads/Deal calendar/2026-01-12 Weekly deal call", "Uploads/Deal calendar/2026-02-15 Signing day"}
    assert not room.documents.exclude(kind="event").exists()  # no markdown file of raw calendar text
    weekly = events["Uploads/Deal calendar/2026-01-12 Weekly deal call"]
    assert weekly.metadata == {
        "subject": "Weekly deal call", "start": "2026-01-12T09:00:00+00:00", "end": "2026-01-12T09:30:00+00:00",
        "location": "Room 4", "attendees": "Ann Lévy <ann@harlow.example>, Ben Osei <ben@beta.example>",
        "tzid": "Europe/London", "rrule": "FREQ=WEEKLY;COUNT=6", "exdate": "2026-01-19T09:00:00+00:00",
        "partstat": "ann@harlow.example=ACCEPTED, ben@beta.example=DECLINED", "uid": "weekly-call@harlow.example",
    }
    assert weekly.content == "Status of the SPA and the disclosure letter."
    assert weekly.source_file.name.endswith(".ics")  # the event's own original, as the file had it
    with weekly.source_file.open("rb") as original:
        alone = Calendar.from_ical(original.read())
    (as_sent,) = alone.walk("VEVENT")  # reminder, organizer and the odd attendee included
    assert as_sent.walk("VALARM") and "priya@harlow.example" in str(as_sent["ORGANIZER"]) and len(as_sent["ATTENDEE"]) == 3
    signing = events["Uploads/Deal calendar/2026-02-15 Signing day"]
    assert signing.metadata["all_day"] == "true" and signing.metadata["start"] == "2026-02-15T00:00:00+00:00"
    assert len(signing.content) == 8_000 and signing.content.endswith("…")

    # the report says what was kept and, for each thing left out, why
    for path in events:
        assert path in page
    assert "Lunch some day" in page and "has no start date" in page
    assert "12 Jan 2026: its reminder: a Taskwright event has no place for it; the event itself is kept." in page
    assert "its organizer, Priya Raman &lt;priya@harlow.example&gt;: a Taskwright event has no place for it" in page
    assert ("the attendee Somebody &lt;not an address&gt;: the address is not an email address; "
            "the event is kept without this attendee.") in page
    assert "the end of its description: calendars take at most 8,000 characters; the rest is kept." in page

    # the Calendar app shows them
    calendar = client.get(reverse("replica-calendar", args=["worlds", room.pk])).content.decode()
    assert "Weekly deal call" in calendar and "Signing day" in calendar and "Ann Lévy" in calendar


def test_the_plain_form_reports_the_same_in_messages(client, team, room, media):  # noqa: F811
    client.force_login(team.author)
    response = upload_page(client, room, ("Deal calendar.ics", calendar_bytes()), htmx=False)
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "Added 2 documents" in page
    assert "Not kept from Deal calendar.ics: The event “Lunch some day”: it has no start date" in page


def test_a_calendar_with_nothing_to_keep_is_refused_and_one_already_uploaded_is_not_kept_twice(team, room, media):  # noqa: F811
    cal = Calendar()
    cal.add("prodid", "-//x//y//EN")
    cal.add("version", "2.0")
    undated = Event()
    undated.add("uid", "undated@x.example")
    undated.add("summary", "Some day")
    cal.add_component(undated)
    with pytest.raises(ApplicationError, match="Nothing in this calendar can be kept: The event “Some day”: it has no start date"):
        documents_upload(world=room, user=team.author, uploaded_files=[SimpleUploadedFile("x.ics", cal.to_ical())])
    assert not room.documents.exists() and stored_files(media) == []

    documents_upload(world=room, user=team.author, uploaded_files=[SimpleUploadedFile("Deal calendar.ics", calendar_bytes())])
    with pytest.raises(ApplicationError, match="already in the data room as Uploads/Deal calendar/2026-01-12 Weekly deal call"):
        documents_upload(world=room, user=team.author, uploaded_files=[SimpleUploadedFile("again.ics", calendar_bytes())])
    assert room.documents.count() == 2


# --- email and its attachments ----------------------------------------------------------------

def test_an_emails_attachments_become_files_linked_from_it(client, team, room, media):  # noqa: F811
    client.force_login(team.author)
    data = mail_with_attachments()
    response = upload_page(client, room, ("spa.eml", data))
    assert response.status_code == 200
    page = response.content.decode()

    email = room.documents.get(kind="email")
    assert email.path == "Uploads/spa.eml" and email.content.startswith("Priya,\n\nThe signing version")
    attachments = ["Uploads/Attachments/SPA signing version.docx", "Uploads/Attachments/Cap table.csv",
                   "Uploads/Attachments/Fwd board approval.md"]
    assert email.metadata["attachments"] == ", ".join(attachments)
    assert email.metadata["message_id"] == "<spa-1@beta.example>"
    spa = room.documents.get(path=attachments[0])
    assert (spa.kind, spa.format) == ("file", "docx") and spa.content.startswith("# Share purchase agreement")
    assert (media / spa.source_file.name).read_bytes() == SPA_DOCX  # the attachment's own bytes, as its original
    assert spa.source_name == "SPA signing version.docx"
    assert room.documents.get(path=attachments[1]).content == "Holder,Shares\nFounders,6000000\n"
    assert "The board approved." in room.documents.get(path=attachments[2]).content
    assert (media / email.source_file.name).read_bytes() == data  # the mail as sent, attachments and all

    assert "Attached to Uploads/spa.eml" in page
    assert "The attachment signature.png of the email Uploads/spa.eml: it is a picture (PNG), which the data room does not" in page

    mail = client.get(reverse("replica-mail", args=["worlds", room.pk])).content.decode()
    assert "Northwind SPA, signing version" in mail
    thread = client.get(reverse("replica-mail", args=["worlds", room.pk]), {"id": email.path}).content.decode()
    assert "Cap table.csv" in thread and "(not in the data room)" not in thread


def test_a_mailbox_becomes_its_messages_with_threads_and_a_reply_joins_its_thread_later(client, team, room, media):  # noqa: F811
    client.force_login(team.author)
    response = upload_page(client, room, ("Deal mail.mbox", mbox_bytes()))
    assert response.status_code == 200, response.content.decode()[:2000]
    emails = {d.path: d for d in room.documents.filter(kind="email")}
    root, reply, again, board = (
        "Uploads/Deal mail/2026-01-05 0900 Escrow terms.eml", "Uploads/Deal mail/2026-01-05 1100 Re: Escrow terms.eml",
        "Uploads/Deal mail/2026-01-06 0800 Re: Escrow terms.eml", "Uploads/Deal mail/2026-01-07 0800 Board pack.eml",
    )
    assert set(emails) == {root, reply, again, board}
    assert "thread" not in emails[root].metadata
    assert emails[reply].metadata["thread"] == root and emails[again].metadata["thread"] == root
    assert emails[board].metadata["attachments"] == "Uploads/Deal mail/Attachments/Board pack.md"
    assert emails[reply].content == "12 months, not 18.\n"
    page = response.content.decode()
    assert "The email “Escrow terms” of 05 Jan 2026: it is already in the data room as " + root in page

    thread = client.get(reverse("replica-mail", args=["worlds", room.pk]), {"id": root}).content.decode()
    assert "12 months, not 18." in thread and "Agreed: 12 months." in thread

    late = message("Re: Escrow terms", dt.datetime(2026, 1, 8, 8, 0, tzinfo=UTC), msg_id="<escrow-4@harlow.example>",
                   reply_to=["<escrow-1@beta.example>", "<escrow-3@beta.example>"], body="Signed off.\n")
    upload_page(client, room, ("late.eml", late.as_bytes()))
    assert room.documents.get(path="Uploads/late.eml").metadata["thread"] == root


# --- the world export carries them -------------------------------------------------------------

def test_the_world_export_carries_uploaded_events_mail_and_attachments(team, room, media):  # noqa: F811
    files = [SimpleUploadedFile("Deal calendar.ics", calendar_bytes()), SimpleUploadedFile("spa.eml", mail_with_attachments()),
             SimpleUploadedFile("Deal mail.mbox", mbox_bytes())]
    documents_upload(world=room, user=team.author, uploaded_files=files)
    with world_export(world=room, user=team.author) as out, zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        ics = Calendar.from_ical(archive.read(".apps_data/calendar/calendar.ics"))
        box_data = archive.read(".apps_data/mail/sent.mbox")
    events = {str(e["UID"]): e for e in ics.walk("VEVENT")}
    assert set(events) == {"weekly-call@harlow.example", "signing@harlow.example"}
    weekly = events["weekly-call@harlow.example"]
    assert weekly["DTSTART"].params["TZID"] == "Europe/London"
    assert weekly.decoded("DTSTART") == dt.datetime(2026, 1, 12, 9, 0, tzinfo=LONDON)
    assert weekly["RRULE"].to_ical() == b"FREQ=WEEKLY;COUNT=6"
    assert [d.dt for d in weekly["EXDATE"].dts] == [dt.datetime(2026, 1, 19, 9, 0, tzinfo=LONDON)]
    answers = {str(a): (str(a.params["CN"]), a.params.get("PARTSTAT")) for a in weekly["ATTENDEE"]}
    assert answers == {"mailto:ann@harlow.example": ("Ann Lévy", "ACCEPTED"), "mailto:ben@beta.example": ("Ben Osei", "DECLINED")}
    signing = events["signing@harlow.example"]
    assert signing.decoded("DTSTART") == dt.date(2026, 2, 15) and signing["DTSTART"].params.get("VALUE") == "DATE"

    with_spool = media.parent / "sent.mbox"
    with_spool.write_bytes(box_data)
    box = mailbox.mbox(str(with_spool), create=False)
    messages = {m["Message-ID"]: BytesParser(policy=policy.default).parsebytes(m.as_bytes()) for m in box}
    box.close()
    assert set(messages) == {"<spa-1@beta.example>", "<escrow-1@beta.example>", "<escrow-2@harlow.example>",
                             "<escrow-3@beta.example>", "<board@beta.example>"}
    spa = messages["<spa-1@beta.example>"]
    assert spa["X-Attachments"] == ("/Uploads/Attachments/SPA signing version.docx, /Uploads/Attachments/Cap table.csv, "
                                    "/Uploads/Attachments/Fwd board approval.md")
    assert {"filesystem/Uploads/Attachments/SPA signing version.docx", "filesystem/Uploads/Attachments/Cap table.csv"} <= names
    for reply in ("<escrow-2@harlow.example>", "<escrow-3@beta.example>"):
        assert messages[reply]["X-Thread-ID"] == "<escrow-1@beta.example>"
    assert messages["<escrow-1@beta.example>"]["X-Thread-ID"] == "<escrow-1@beta.example>"


# --- the API, and all or nothing -----------------------------------------------------------------

def test_the_api_lists_what_was_kept_and_what_was_not(team, room, media):  # noqa: F811
    response = api_for(team.author).post(
        f"/api/worlds/{room.pk}/uploads/",
        {"files": [SimpleUploadedFile("spa.eml", mail_with_attachments()), SimpleUploadedFile("Deal calendar.ics", calendar_bytes())]},
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert [d["path"] for d in body["documents"]][:2] == ["Uploads/spa.eml", "Uploads/Attachments/SPA signing version.docx"]
    mail, calendar = body["files"]
    assert (mail["name"], mail["format"], calendar["format"]) == ("spa.eml", "eml", "ics")
    assert [k["remark"] for k in mail["kept"]][1:3] == ["Attached to Uploads/spa.eml"] * 2
    assert [(n["item"], n["reason"].split(" (")[0]) for n in mail["not_kept"]] == [
        ("The attachment signature.png of the email Uploads/spa.eml", "it is a picture"),
    ]
    assert {k["kind"] for k in calendar["kept"]} == {"event"}
    assert any(n["item"] == "The event “Lunch some day”" and "no start date" in n["reason"] for n in calendar["not_kept"])


def test_a_refused_file_leaves_nothing_half_stored(team, room, media):  # noqa: F811
    response = api_for(team.author).post(
        f"/api/worlds/{room.pk}/uploads/",
        {"files": [SimpleUploadedFile("spa.eml", mail_with_attachments()), SimpleUploadedFile("Deal mail.mbox", mbox_bytes()),
                   SimpleUploadedFile("setup.exe", builders.exe_bytes())]},
        format="multipart",
    )
    assert response.status_code == 400
    assert [f["name"] for f in response.json()["files"]] == ["setup.exe"]
    assert not Document.objects.filter(world=room).exists()
    assert stored_files(media) == []  # neither the mail's nor its attachments' nor the messages' originals
