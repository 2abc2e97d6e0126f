"""A world zip written by other tools: Google Chat dates, References threading, an
all-day event with DURATION, a .txt and an .eml in the drive, macOS leftovers."""

import io
import json
import zipfile

from tests.archipelago.conftest import import_bytes

MBOX = b"""From a@x.test Thu Jan  1 00:00:00 2026
Message-ID: <root@x.test>
Date: Mon, 05 Jan 2026 09:00:00 -0000
From: Ann <a@x.test>
To: Bob <b@x.test>
Subject: Offer

Our offer is attached.

From b@x.test Thu Jan  1 00:00:00 2026
Message-ID: <reply@x.test>
In-Reply-To: <root@x.test>
References: <root@x.test>
Date: Mon, 05 Jan 2026 10:00:00 +0100
From: b@x.test
To: a@x.test
Subject: Re: Offer
Content-Type: text/html; charset=utf-8

<p>Thanks, <b>received</b>.</p><script>alert(1)</script>

"""

ICS = b"""BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//Other//EN
BEGIN:VEVENT
UID:offsite@x.test
DTSTART;VALUE=DATE:20260210
DURATION:P1D
SUMMARY:Offsite
ATTENDEE;CN=Ann:mailto:a@x.test
END:VEVENT
END:VCALENDAR
"""

MESSAGES = {"messages": [
    {"creator": {"name": "Ann", "email": "a@x.test", "user_type": "Human"},
     "created_date": "Monday, January 5, 2026 at 9:30:00\u202fAM UTC",
     "text": "Kick-off at 10", "topic_id": "t1", "message_id": "AAAA/t1/t1"},
    {"creator": {"name": "Bob", "email": "b@x.test", "user_type": "Human"}, "created_date": "Monday, January 5, 2026 at 9:31:00 AM UTC",
     "text": "OK", "topic_id": "t1", "message_id": "AAAA/t1/r2"},
]}


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_a_foreign_world_is_read_leniently(team, media):
    data = _zip({
        "filesystem/Notes/todo.txt": b"Call the bank.\n",
        "filesystem/Mail/offer.eml": b"From: a@x.test\nTo: b@x.test\nSubject: Offer\n\nSaved copy.\n",
        "filesystem/.DS_Store": b"\x00\x00\x00\x01Bud1",
        "__MACOSX/filesystem/._todo.txt": b"\x00\x05\x16\x07",
        ".apps_data/mail/sent.mbox": MBOX,
        ".apps_data/chat/Groups/Space AAAA/messages.json": json.dumps(MESSAGES).encode(),
        ".apps_data/chat/Groups/Space AAAA/group_info.json": json.dumps({"name": "deal team", "members": []}).encode(),
        ".apps_data/calendar/other.ics": ICS,
    })
    world = import_bytes(data, team.project, team.author)
    docs = {d.path: d for d in world.documents.all()}
    assert set(docs) == {
        "Notes/todo.txt", "Mail/offer.eml", "Mail/2026-01-05 0900 Offer.eml", "Mail/2026-01-05 1000 Re: Offer.eml",
        "Chat/deal team/001", "Chat/deal team/002", "Calendar/2026-02-10 Offsite",
    }
    assert docs["Notes/todo.txt"].format == "md" and docs["Notes/todo.txt"].content == "Call the bank.\n"
    assert docs["Mail/offer.eml"].kind == "file"  # a saved email in the drive stays a file there
    root, reply = docs["Mail/2026-01-05 0900 Offer.eml"], docs["Mail/2026-01-05 1000 Re: Offer.eml"]
    assert root.metadata["date"] == "2026-01-05T09:00:00+00:00"  # "-0000" read as UTC
    assert reply.metadata["thread"] == root.path and reply.metadata["from"] == "b@x.test"
    assert "received" in reply.content and "<" not in reply.content and "alert" not in reply.content
    chat = docs["Chat/deal team/002"]
    assert chat.metadata == {"channel": "deal team", "from": "Bob <b@x.test>", "date": "2026-01-05T09:31:00+00:00",
                             "thread": "Chat/deal team/001", "group_id": "Space AAAA", "topic_id": "t1", "message_id": "AAAA/t1/r2"}
    first = docs["Chat/deal team/001"].metadata  # its message_id AAAA/t1/t1 is what its group and topic give: not stored
    assert first["topic_id"] == "t1" and first["group_id"] == "Space AAAA" and "message_id" not in first
    event = docs["Calendar/2026-02-10 Offsite"]
    assert event.metadata["start"] == "2026-02-10T00:00:00+00:00" and event.metadata["end"] == "2026-02-11T00:00:00+00:00"
    assert event.metadata["attendees"] == "Ann <a@x.test>"
    assert event.metadata["uid"] == "offsite@x.test" and event.metadata["all_day"] == "true"
