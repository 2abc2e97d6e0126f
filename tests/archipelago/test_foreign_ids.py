"""A foreign world (not written by Taskwright) keeps what it came with through import and
re-export, so a prompt or rubric that names an item still finds it (FORMATS.md, the last
paragraph of "World on disk"): Message-IDs and X-Thread-IDs, chat group / topic /
message / user ids, event UIDs, all-day events, RRULE and EXDATE, TZID, attendees' CN
and PARTSTAT; a chat reply dated before its root stays a reply."""

import datetime as dt
import io
import json
import mailbox
import re
import tempfile
import zipfile
import zoneinfo
from email import policy
from email.parser import BytesParser

import pytest
from icalendar import Calendar

from tests.archipelago.conftest import entries, export_bytes, import_bytes

MBOX = """From ann@other.test Mon Jan  5 09:00:00 2026
Message-ID: <root-1@mail.other.test>
X-Thread-ID: <root-1@mail.other.test>
Date: Mon, 05 Jan 2026 09:00:00 +0100
From: Ann Lévy <ann@other.test>
To: Zoë Marc <zoe@other.test>
Subject: Offer — final
X-Attachments: /Deal/Investment memo.md, Deal/Term sheet.md
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: 8bit

Our final offer — see the memo.

From zoe@other.test Mon Jan  5 11:00:00 2026
Message-ID: <reply-1@mail.other.test>
X-Thread-ID: <root-1@mail.other.test>
In-Reply-To: <root-1@mail.other.test>
References: <root-1@mail.other.test>
Date: Mon, 05 Jan 2026 11:00:00 +0000
From: Zoë Marc <zoe@other.test>
To: Ann Lévy <ann@other.test>
Subject: Re: Offer — final

Accepted.

From bob@other.test Tue Jan  6 08:00:00 2026
Message-ID: <late-1@mail.other.test>
X-Thread-ID: <not-in-this-mailbox@mail.other.test>
Date: Tue, 06 Jan 2026 08:00:00 -0500
From: bob@other.test
To: ann@other.test
Subject: Fwd: board pack

The first message of this thread was never in the mailbox.
""".encode()

SPACE = "Space AAAAq7Lk2xE"
ROOT_ID, REPLY_ID, OTHER_ID = (
    "AAAAq7Lk2xE/Tq1Zr9_kP0Q/Tq1Zr9_kP0Q",
    "AAAAq7Lk2xE/Tq1Zr9_kP0Q/Vb3Xk2mN8Lw",
    "AAAAq7Lk2xE/Hh8Wd3sE2aA/Hh8Wd3sE2aA",
)
ANN_USER = "User 104827195739182739182"
MESSAGES = {"messages": [
    {"creator": {"name": "Ann Lévy", "email": "ann@other.test", "user_type": "Human"},
     "created_date": "Monday, January 5, 2026 at 9:30:00 AM UTC", "text": "Who has the SPA draft?", "topic_id": "Tq1Zr9_kP0Q",
     "message_id": ROOT_ID},
    # A reply whose clock was behind: dated a minute before the message it answers.
    {"creator": {"name": "Bob", "email": "bob@other.test", "user_type": "Human"},
     "created_date": "Monday, January 5, 2026 at 9:29:00 AM UTC", "text": "I do, sending it now.", "topic_id": "Tq1Zr9_kP0Q",
     "message_id": REPLY_ID},
    {"creator": {"name": "Bob", "email": "bob@other.test", "user_type": "Human"},
     "created_date": "Monday, January 5, 2026 at 10:00:00 AM UTC", "text": "Lunch?", "topic_id": "Hh8Wd3sE2aA", "message_id": OTHER_ID},
]}
GROUP_INFO = {"name": "deal room", "members": [{"name": "Ann Lévy", "email": "ann@other.test", "user_type": "Human"}]}
ANN = {"user": {"name": "Ann Lévy", "email": "ann@other.test", "user_type": "Human"},
       "membership_info": [{"group_name": "deal room", "group_id": SPACE, "membership_state": "MEMBER_JOINED"}]}

ICS = b"""BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//Other Corp//Calendar//EN
BEGIN:VEVENT
UID:offsite-2026@cal.other.test
DTSTAMP:20260101T000000Z
DTSTART;VALUE=DATE:20260210
DTEND;VALUE=DATE:20260212
SUMMARY:Team offsite
END:VEVENT
BEGIN:VEVENT
UID:standup@cal.other.test
DTSTAMP:20260101T000000Z
DTSTART:20260105T090000Z
DTEND:20260105T091500Z
RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=6
EXDATE:20260119T090000Z
SUMMARY:Deal stand-up
ATTENDEE;CN=Ann L\xc3\xa9vy;PARTSTAT=ACCEPTED:mailto:ann@other.test
ATTENDEE;CN=Bob;PARTSTAT=DECLINED:mailto:bob@other.test
END:VEVENT
BEGIN:VEVENT
UID:ic-paris@cal.other.test
DTSTAMP:20260101T000000Z
DTSTART;TZID=Europe/Paris:20260112T150000
DTEND;TZID=Europe/Paris:20260112T163000
SUMMARY:Investment Committee
LOCATION:Paris office
ATTENDEE;CN=Zo\xc3\xab Marc;PARTSTAT=TENTATIVE:mailto:zoe@other.test
END:VEVENT
END:VCALENDAR
"""


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


FOREIGN = _zip({
    "filesystem/Deal/Investment memo.md": b"# Investment memo\n",
    "filesystem/Deal/Term sheet.md": b"# Term sheet\n",
    ".apps_data/mail/sent.mbox": MBOX,
    f".apps_data/chat/Groups/{SPACE}/messages.json": json.dumps(MESSAGES).encode(),
    f".apps_data/chat/Groups/{SPACE}/group_info.json": json.dumps(GROUP_INFO).encode(),
    f".apps_data/chat/Users/{ANN_USER}/user_info.json": json.dumps(ANN).encode(),
    ".apps_data/calendar/work.ics": ICS,
})


@pytest.fixture
def reexported(team, media):
    world = import_bytes(FOREIGN, team.project, team.author, name="other.zip")
    return world, export_bytes(world, team.author)


def _mbox(data: bytes) -> list:
    with tempfile.NamedTemporaryFile(suffix=".mbox") as spool:
        spool.write(entries(data)[".apps_data/mail/sent.mbox"])
        spool.flush()
        return [BytesParser(policy=policy.default).parsebytes(m.as_bytes()) for m in mailbox.mbox(spool.name)]


def test_mail_keeps_its_message_ids_thread_ids_and_text(reexported):
    world, data = reexported
    messages = {str(m["Message-ID"]): m for m in _mbox(data)}
    assert set(messages) == {"<root-1@mail.other.test>", "<reply-1@mail.other.test>", "<late-1@mail.other.test>"}
    root, reply, late = messages["<root-1@mail.other.test>"], messages["<reply-1@mail.other.test>"], messages["<late-1@mail.other.test>"]
    assert root["X-Thread-ID"] == reply["X-Thread-ID"] == "<root-1@mail.other.test>" and reply["In-Reply-To"] == "<root-1@mail.other.test>"
    assert late["X-Thread-ID"] == "<not-in-this-mailbox@mail.other.test>"  # its root was never there: the id is kept all the same
    assert str(root["Subject"]) == "Offer — final" and str(reply["Subject"]) == "Re: Offer — final"
    assert str(root["From"]) == "Ann Lévy <ann@other.test>" and root["From"].addresses[0].addr_spec == "ann@other.test"
    raw = entries(data)[".apps_data/mail/sent.mbox"]
    assert "Subject: Offer — final\n".encode() in raw and b"=?utf-8?" not in raw.lower()  # raw UTF-8, not RFC 2047
    assert root["X-Attachments"] == "/Deal/Investment memo.md, /Deal/Term sheet.md"  # both forms in, absolute out
    for message in messages.values():
        assert re.search(r" [+-]\d{4}$", message["Date"]) and not message["Date"].endswith("-0000")
    stored = world.documents.get(metadata__message_id="<root-1@mail.other.test>")
    assert stored.metadata["attachments"] == "Deal/Investment memo.md, Deal/Term sheet.md"  # data-room paths, as Taskwright stores them
    assert stored.metadata["subject"] == "Offer — final" and stored.metadata["from"] == "Ann Lévy <ann@other.test>"


def test_chat_keeps_its_group_topic_message_and_user_ids_and_roots_by_id(reexported):
    world, data = reexported
    files = entries(data)
    assert {n for n in files if n.startswith(".apps_data/chat/Groups/") and not n.endswith("/")} == {
        f".apps_data/chat/Groups/{SPACE}/messages.json", f".apps_data/chat/Groups/{SPACE}/group_info.json"}
    messages = json.loads(files[f".apps_data/chat/Groups/{SPACE}/messages.json"])["messages"]
    assert [m["message_id"] for m in messages] == [ROOT_ID, REPLY_ID, OTHER_ID]  # the root first, though its reply is dated earlier
    assert [m["topic_id"] for m in messages] == ["Tq1Zr9_kP0Q", "Tq1Zr9_kP0Q", "Hh8Wd3sE2aA"]
    assert messages[1]["created_date"] < messages[0]["created_date"]  # the reply's own (earlier) time is kept
    assert json.loads(files[f".apps_data/chat/Groups/{SPACE}/group_info.json"])["name"] == "deal room"
    ann = json.loads(files[f".apps_data/chat/Users/{ANN_USER}/user_info.json"])
    assert ann["user"]["email"] == "ann@other.test" and ann["membership_info"][0]["group_id"] == SPACE
    reply = world.documents.get(metadata__message_id=REPLY_ID)
    root = world.documents.get(metadata__topic_id="Tq1Zr9_kP0Q", metadata__thread__isnull=True)
    assert reply.metadata["thread"] == root.path and reply.metadata["date"] == "2026-01-05T09:29:00+00:00"


def test_events_keep_uids_all_day_recurrence_time_zones_and_answers(reexported):
    world, data = reexported
    raw = entries(data)[".apps_data/calendar/calendar.ics"]
    events = {str(e["UID"]): e for e in Calendar.from_ical(raw).walk("VEVENT")}
    assert set(events) == {"offsite-2026@cal.other.test", "standup@cal.other.test", "ic-paris@cal.other.test"}
    for event in events.values():  # what Archipelago's calendar needs, on every event
        for field in ("DTSTART", "DTEND", "CREATED", "LAST-MODIFIED", "SUMMARY"):
            assert event.get(field) is not None, field
        assert "DURATION" not in event
    offsite = events["offsite-2026@cal.other.test"]
    assert b"DTSTART;VALUE=DATE:20260210" in raw and b"DTEND;VALUE=DATE:20260212" in raw
    assert offsite.decoded("DTSTART") == dt.date(2026, 2, 10) and offsite.decoded("DTEND") == dt.date(2026, 2, 12)
    standup = events["standup@cal.other.test"]
    assert standup["RRULE"]["FREQ"] == ["WEEKLY"] and standup["RRULE"]["BYDAY"] == ["MO"] and standup["RRULE"]["COUNT"] == [6]
    assert [d.dt for d in standup["EXDATE"].dts] == [dt.datetime(2026, 1, 19, 9, 0, tzinfo=dt.UTC)]
    answers = {str(a): (a.params["CN"], a.params["PARTSTAT"]) for a in standup["ATTENDEE"]}
    assert answers == {"mailto:ann@other.test": ("Ann Lévy", "ACCEPTED"), "mailto:bob@other.test": ("Bob", "DECLINED")}
    paris = events["ic-paris@cal.other.test"]
    assert b"DTSTART;TZID=Europe/Paris:20260112T150000" in raw and b"DTEND;TZID=Europe/Paris:20260112T163000" in raw
    assert paris.decoded("DTSTART") == dt.datetime(2026, 1, 12, 15, 0, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))
    assert b"BEGIN:VTIMEZONE" in raw and b"TZID:Europe/Paris" in raw
    assert (paris["ATTENDEE"].params["CN"], paris["ATTENDEE"].params["PARTSTAT"]) == ("Zoë Marc", "TENTATIVE")
    stored = world.documents.get(metadata__uid="standup@cal.other.test").metadata
    assert (stored["rrule"], stored["exdate"], stored["partstat"]) == (
        "FREQ=WEEKLY;COUNT=6;BYDAY=MO", "2026-01-19T09:00:00+00:00", "ann@other.test=ACCEPTED, bob@other.test=DECLINED")


def test_a_foreign_world_settles_after_one_pass(reexported, team):
    """Imported again, the re-export gives the same bytes for every entry."""
    _world, data = reexported
    again = export_bytes(import_bytes(data, team.project, team.author), team.author)
    before, after = entries(data), entries(again)
    assert sorted(before) == sorted(after)
    for name in before:
        assert after[name] == before[name], name
