"""The exported zip, opened with the standard readers the harness's apps use."""

import io
import json
import mailbox
import re
import stat
import zipfile
from collections import defaultdict

import pytest
from icalendar import Calendar

from tests.archipelago.conftest import entries, export_bytes
from tests.rendering.samples import CHATS, EMAILS, EVENTS


@pytest.fixture
def exported(full_world, team):
    return export_bytes(full_world, team.author)


def test_the_layout_has_exactly_two_top_level_folders_and_is_deterministic(exported, full_world, team):
    with zipfile.ZipFile(io.BytesIO(exported)) as archive:
        infos = archive.infolist()
    names = [i.filename for i in infos]
    assert {n.split("/", 1)[0] + "/" for n in names} == {"filesystem/", ".apps_data/"}
    assert names == sorted(names)
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert not any(stat.S_ISLNK(i.external_attr >> 16) for i in infos)
    assert export_bytes(full_world, team.author) == exported
    assert {".apps_data/mail/sent.mbox", ".apps_data/calendar/calendar.ics"} <= set(names)
    assert "filesystem/Deal/LOI.docx" in names and "filesystem/Notes/minutes.txt" in names


def test_mail_reads_with_the_standard_mbox_reader(exported, tmp_path):
    path = tmp_path / "sent.mbox"
    path.write_bytes(entries(exported)[".apps_data/mail/sent.mbox"])
    messages = list(mailbox.mbox(path))
    assert len(messages) == len(EMAILS)
    ids = [m["Message-ID"] for m in messages]
    assert len(set(ids)) == len(ids) and all(re.fullmatch(r"<[^<>@\s]+@[^<>\s]+>", i) for i in ids)
    for message in messages:
        assert re.search(r" [+-]\d{4}$", message["Date"]) and not message["Date"].endswith("-0000"), message["Date"]
        assert message["X-Thread-ID"] and message["From"] and message["Subject"]
        assert message.get_content_type() == "text/plain"
    threads = defaultdict(list)
    for message in messages:
        threads[message["X-Thread-ID"]].append(message)
    loi = next(t for t in threads.values() if len(t) == 3)
    root = loi[0]
    assert root["X-Thread-ID"] == root["Message-ID"] and root["In-Reply-To"] is None
    assert [m["In-Reply-To"] for m in loi[1:]] == [loi[0]["Message-ID"], loi[1]["Message-ID"]]
    assert loi[2]["References"].split() == [loi[0]["Message-ID"], loi[1]["Message-ID"]]
    assert root["X-Attachments"] == "/Deal/LOI.docx, /Deal/Model.xlsx"  # absolute from the drive's root, as Archipelago's file tools take
    assert "From our side the price is firm." in root.get_payload(decode=True).decode()


def test_mail_headers_are_raw_utf8_and_read_back_as_text(exported):
    """Archipelago's mail reader does not decode RFC 2047: "—" must be in the mbox as UTF-8."""
    import email.parser
    from email import policy

    data = entries(exported)[".apps_data/mail/sent.mbox"]
    assert "Subject: Project Falcon — LOI".encode() in data and "To: Marc Zoë <marc@zoe.io>".encode() in data
    assert b"=?utf-8?" not in data.lower()
    parsed = [email.parser.BytesParser(policy=policy.default).parsebytes(m.as_bytes()) for m in _mbox(exported)]
    assert {str(m["Subject"]) for m in parsed} >= {"Project Falcon — LOI", "Re: Project Falcon — LOI"}
    assert "Marc Zoë <marc@zoe.io>" in {str(m["From"]) for m in parsed}


def _mbox(exported: bytes) -> list:
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".mbox") as spool:
        spool.write(entries(exported)[".apps_data/mail/sent.mbox"])
        spool.flush()
        return list(mailbox.mbox(spool.name))


def test_every_event_has_the_fields_the_calendar_app_needs(exported):
    calendar = Calendar.from_ical(entries(exported)[".apps_data/calendar/calendar.ics"])
    events = list(calendar.walk("VEVENT"))
    assert len(events) == len(EVENTS)
    for event in events:
        for field in ("UID", "DTSTART", "DTEND", "CREATED", "LAST-MODIFIED", "SUMMARY"):
            assert event.get(field) is not None, field
        assert "DURATION" not in event
        assert all(
            str(a).startswith("mailto:") and a.params.get("CN")
            for a in (event.get("ATTENDEE") if isinstance(event.get("ATTENDEE"), list) else [event.get("ATTENDEE")])
        )


def test_chat_groups_follow_the_google_chat_shape(exported):
    files = entries(exported)
    groups = {n.split("/")[3] for n in files if n.startswith(".apps_data/chat/Groups/") and not n.endswith("/")}
    assert len(groups) == 2
    total = 0
    for group_id in groups:
        messages = json.loads(files[f".apps_data/chat/Groups/{group_id}/messages.json"])["messages"]
        info = json.loads(files[f".apps_data/chat/Groups/{group_id}/group_info.json"])
        assert group_id.startswith("Space ") and info["name"] in ("deal-team", "legal")
        assert all(m["user_type"] == "Human" and m["email"] and m["name"] for m in info["members"])
        assert [m["created_date"] for m in messages] == sorted(m["created_date"] for m in messages)  # oldest first
        seen_topics = set()
        for message in messages:
            space, topic, unique = message["message_id"].split("/")
            assert space == group_id.removeprefix("Space ") and topic == message["topic_id"]
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", message["created_date"])
            assert set(message["creator"]) == {"name", "email", "user_type"}
            if unique == topic:  # a thread root comes before its replies
                seen_topics.add(topic)
            else:
                assert topic in seen_topics
        total += len(messages)
    assert total == len(CHATS)
    users = [json.loads(v) for n, v in files.items() if n.startswith(".apps_data/chat/Users/") and n.endswith("user_info.json")]
    assert len(users) == 3
    for user in users:
        assert set(user["user"]) == {"name", "email", "user_type"}
        assert all(m["membership_state"] == "MEMBER_JOINED" and m["group_id"] in groups for m in user["membership_info"])


def test_spreadsheets_carry_cached_formula_values(exported):
    import openpyxl

    workbook = openpyxl.load_workbook(io.BytesIO(entries(exported)["filesystem/Deal/Model.xlsx"]), data_only=True)
    assert workbook["Cap table"]["B4"].value == 10_000_000
    assert workbook["Cap table"]["C2"].value == pytest.approx(0.6)
    assert workbook["Valuation"]["B7"].value == "no"
    formulas = openpyxl.load_workbook(io.BytesIO(entries(exported)["filesystem/Deal/Model.xlsx"]))
    assert formulas["Cap table"]["B4"].value == "=SUM(B2:B3)"


def test_office_files_and_pdfs_open_with_their_readers(exported):
    import docx
    import pptx
    from pypdf import PdfReader

    files = entries(exported)
    memo = docx.Document(io.BytesIO(files["filesystem/Deal/Memo.docx"]))
    assert memo.paragraphs[0].text == "Project Falcon — Investment Committee Memo" and memo.core_properties.author == "Jane Doe"
    assert "Letter of intent" in docx.Document(io.BytesIO(files["filesystem/Deal/LOI.docx"])).paragraphs[0].text
    deck = pptx.Presentation(io.BytesIO(files["filesystem/Deal/Board deck.pptx"]))
    assert [s.shapes.title.text for s in deck.slides] == ["Project Falcon — Board update", "Deal status", "Risks", "Ask"]
    assert "Transaction summary" in PdfReader(io.BytesIO(files["filesystem/Deal/Memo.pdf"])).pages[0].extract_text()
    assert files["filesystem/Parties.csv"].startswith(b"Party,Role,Email\r\n")
    assert files["filesystem/Notes/empty.md"] == b""
