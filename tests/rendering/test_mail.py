import email
import email.policy
import mailbox
import re
from email.utils import parsedate_to_datetime

import pytest

from authoring.rendering import (
    RenderError,
    WorldItem,
    parse_content,
    render_file,
    render_mbox,
    structured_to_content,
    structured_to_metadata,
)
from tests.rendering.samples import EMAILS, ROOT


def _messages(tmp_path, data: bytes) -> list:
    """The mbox read with the stdlib, each message re-read with the modern policy (decoded headers)."""
    path = tmp_path / "sent.mbox"
    path.write_bytes(data)
    return [email.message_from_bytes(m.as_bytes(), policy=email.policy.default) for m in mailbox.mbox(str(path))]


def test_mbox_holds_every_email_with_the_headers_readers_need(tmp_path):
    messages = _messages(tmp_path, render_mbox(EMAILS, world_key="world-7"))
    assert len(messages) == 4
    ids = [m["Message-ID"] for m in messages]
    assert all(re.fullmatch(r"<[0-9a-f]{32}@taskwright\.local>", i) for i in ids)
    assert len(set(ids)) == 4
    for m in messages:
        assert re.search(r" [+-]\d{4}$", m["Date"]) and not m["Date"].endswith("-0000")
        assert parsedate_to_datetime(m["Date"]).tzinfo is not None
        assert m.get_content_type() == "text/plain" and not m.is_multipart()
        assert m.get_content_charset() == "utf-8"
        assert m["X-Body-Format"] == "plain"
    dates = [parsedate_to_datetime(m["Date"]) for m in messages]
    assert dates == sorted(dates)  # oldest first
    first = next(m for m in messages if m["Subject"] == "Project Falcon — LOI")
    assert first["From"] == "Jane Doe <jane@acme.com>"
    assert first["To"] == "Marc Zoë <marc@zoe.io>"
    assert first["Cc"] == '"Smith, John" <john@acme.com>'
    assert first["Date"] == "Mon, 05 Jan 2026 09:00:00 +0100"
    assert first["X-Attachments"] == "/Deal/LOI.docx, /Deal/Model.xlsx"
    body = first.get_payload(decode=True).decode()
    assert "Please find attached our non-binding offer." in body
    bcc = next(m for m in messages if m["Bcc"])
    assert bcc["Bcc"] == "counsel@firm.law"


def test_threads_share_the_roots_message_id_and_chain_replies_by_date(tmp_path):
    messages = _messages(tmp_path, render_mbox(EMAILS, world_key="world-7"))
    by_subject = {}
    for m in messages:
        by_subject.setdefault(m["X-Thread-ID"], []).append(m)
    root = next(m for m in messages if m["Subject"] == "Project Falcon — LOI")
    thread = by_subject[root["Message-ID"]]
    assert len(thread) == 3  # the root carries its own Message-ID as X-Thread-ID
    assert root["In-Reply-To"] is None and root["References"] is None
    reply, second = thread[1], thread[2]
    assert reply["In-Reply-To"] == root["Message-ID"]
    assert reply["References"] == root["Message-ID"]
    assert second["In-Reply-To"] == reply["Message-ID"]
    assert second["References"].split() == [root["Message-ID"], reply["Message-ID"]]
    alone = next(m for m in messages if m["Subject"] == "Diligence kick-off")
    assert alone["X-Thread-ID"] == alone["Message-ID"]


def test_mbox_is_deterministic_and_ids_follow_world_and_path():
    first = render_mbox(EMAILS, world_key="world-7")
    assert first == render_mbox(list(reversed(EMAILS)), world_key="world-7")
    assert first != render_mbox(EMAILS, world_key="world-8")


def test_a_body_line_starting_with_from_neither_splits_the_mbox_nor_changes_the_text(tmp_path):
    data = render_mbox(EMAILS)
    assert b"\nFrom our side" not in data
    messages = _messages(tmp_path, data)
    assert len(messages) == 4
    assert messages[0].get_content() == EMAILS[0].content  # no ">From" quoting left in the text


def test_single_eml_parses_with_the_stdlib():
    reply = EMAILS[1]
    rendered = render_file("email", "", reply.content, reply.metadata, path=reply.path, world_key="world-7")
    assert rendered.filename == "02 Re LOI.eml"
    assert rendered.content_type == "message/rfc822"
    msg = email.message_from_bytes(rendered.data, policy=email.policy.default)
    assert msg["Subject"] == "Re: Project Falcon — LOI"
    assert msg["Date"] == "Mon, 05 Jan 2026 14:30:00 +0000"
    assert msg.get_content().startswith("Jane,\n\nThanks, we will revert by Friday.")
    root_eml = render_file("email", "", EMAILS[0].content, EMAILS[0].metadata, path=ROOT, world_key="world-7")
    root_id = email.message_from_bytes(root_eml.data, policy=email.policy.default)["Message-ID"]
    assert msg["X-Thread-ID"] == root_id == msg["In-Reply-To"]


def test_email_round_trip_structured_content_metadata():
    item = EMAILS[0]
    structured = parse_content("email", "", item.content, item.metadata)
    assert structured["from"] == {"name": "Jane Doe", "email": "jane@acme.com"}
    assert structured["cc"] == [{"name": "Smith, John", "email": "john@acme.com"}]
    assert structured["attachments"] == ["Deal/LOI.docx", "Deal/Model.xlsx"]
    content = structured_to_content("email", "", structured)
    metadata = structured_to_metadata("email", "", structured)
    assert content == item.content
    assert parse_content("email", "", content, metadata) == structured
    assert {k: v for k, v in metadata.items() if v} == {k: v for k, v in item.metadata.items() if k != "thread"}


@pytest.mark.parametrize(("change", "message"), [
    ({"date": ""}, "metadata 'date' is missing"),
    ({"date": "5 January 2026"}, "metadata 'date': '5 January 2026' is not an ISO 8601 date"),
    ({"date": "2026-01-05T09:00:00"}, "has no UTC offset"),
    ({"date": "2026-02-30T09:00:00+00:00"}, "is not an ISO 8601 date"),
    ({"from": ""}, "metadata 'from' is missing"),
    ({"from": "Jane Doe"}, "metadata 'from': 'Jane Doe' is not an email address"),
    ({"to": "Marc <marc@zoe.io>, Legal team"}, "metadata 'to': 'Legal team' is not an email address"),
    ({"to": "", "cc": ""}, "at least one recipient"),
])
def test_invalid_email_metadata_names_the_field(change, message):
    with pytest.raises(RenderError, match=message):
        parse_content("email", "", "Hi", {**EMAILS[0].metadata, **change})


def test_mbox_refuses_a_thread_that_points_nowhere_or_goes_back_in_time():
    orphan = WorldItem("Mail/x.eml", "x", {**EMAILS[1].metadata, "thread": "Mail/missing.eml"})
    with pytest.raises(RenderError, match=r"Mail/x.eml: metadata 'thread' is 'Mail/missing.eml', which is not an email"):
        render_mbox([EMAILS[0], orphan])
    early = WorldItem("Mail/early.eml", "x", {**EMAILS[1].metadata, "date": "2026-01-01T00:00:00+00:00"})
    with pytest.raises(RenderError, match="before its thread's first email"):
        render_mbox([EMAILS[0], early])
    with pytest.raises(RenderError, match=r"Mail/bad\.eml: metadata 'date'"):
        render_mbox([WorldItem("Mail/bad.eml", "x", {**EMAILS[3].metadata, "date": "yesterday"})])


def test_headers_are_raw_utf8_in_the_mbox_and_the_eml(tmp_path):
    """Archipelago's reader shows RFC 2047 encoded-words as they are ("=?utf-8?b?4oCU?=")."""
    data = render_mbox(EMAILS)
    assert "Subject: Project Falcon — LOI\n".encode() in data and "From: Marc Zoë <marc@zoe.io>\n".encode() in data
    assert b"=?utf-8?" not in data.lower()
    first = next(m for m in _messages(tmp_path, data) if m["Message-ID"] == render_mbox_id(EMAILS[0]))
    assert str(first["Subject"]) == "Project Falcon — LOI" and str(first["To"]) == "Marc Zoë <marc@zoe.io>"
    eml = render_file("email", "", EMAILS[1].content, EMAILS[1].metadata, path=EMAILS[1].path).data
    assert "Subject: Re: Project Falcon — LOI\n".encode() in eml and b"=?utf-8?" not in eml.lower()
    assert str(email.message_from_bytes(eml, policy=email.policy.default)["From"]) == "Marc Zoë <marc@zoe.io>"


def render_mbox_id(item) -> str:
    from authoring.rendering.mail import message_id

    return message_id("", item.path)


def test_long_non_ascii_headers_are_folded_and_stay_valid(tmp_path):
    subject = "Très long objet — " + " ".join(f"clause {n} révisée" for n in range(40))
    long = WorldItem("Mail/long.eml", "x", {**EMAILS[3].metadata, "subject": subject,
                                             "attachments": ", ".join(f"Deal/Annexe {n} — signée.pdf" for n in range(20))})
    data = render_mbox([long])
    head = data.split(b"\n\n", 1)[0].split(b"\n")[1:]  # after the "From " separator line
    assert all(len(line) <= 100 for line in head), max(head, key=len)  # folded near 78, never near 998
    (message,) = _messages(tmp_path, data)
    assert str(message["Subject"]) == subject
    assert message["X-Attachments"] == ", ".join(f"/Deal/Annexe {n} — signée.pdf" for n in range(20))
    url = "https://dataroom.example.com/projects/falcon/documents/" + "a1b2c3d4" * 8
    linked = WorldItem("Mail/url.eml", "x", {**EMAILS[3].metadata, "subject": f"Übersicht — {url}"})
    data = render_mbox([linked])
    assert f"Subject: Übersicht — {url}\n".encode() in data and b"=?" not in data  # one long line (valid up to 998), not encoded-words
    assert str(_messages(tmp_path, data)[0]["Subject"]) == f"Übersicht — {url}"
    unbreakable = WorldItem("Mail/word.eml", "x", {**EMAILS[3].metadata, "subject": "é" * 600})
    with pytest.raises(RenderError, match=r"Mail/word\.eml: a header of the email .* has a word too long for a mail line"):
        render_mbox([unbreakable])


def test_an_imported_email_keeps_its_message_id_and_thread_id(tmp_path):
    root = WorldItem("Mail/a.eml", "x", {**EMAILS[0].metadata, "message_id": "<abc@other.test>", "attachments": "/Deal/LOI.docx"})
    reply = WorldItem("Mail/b.eml", "y", {**EMAILS[1].metadata, "thread": "Mail/a.eml", "message_id": "<def@other.test>"})
    orphan = WorldItem("Mail/c.eml", "z", {**EMAILS[3].metadata, "thread_id": "<gone@other.test>"})
    by_id = {m["Message-ID"]: m for m in _messages(tmp_path, render_mbox([root, reply, orphan]))}
    assert by_id["<abc@other.test>"]["X-Thread-ID"] == by_id["<def@other.test>"]["X-Thread-ID"] == "<abc@other.test>"
    assert by_id["<def@other.test>"]["In-Reply-To"] == "<abc@other.test>"
    assert by_id["<abc@other.test>"]["X-Attachments"] == "/Deal/LOI.docx"  # one leading slash, however it was written
    assert by_id[render_mbox_id(orphan)]["X-Thread-ID"] == "<gone@other.test>"
    single = email.message_from_bytes(render_file("email", "", reply.content, {**reply.metadata, "thread_id": "<abc@other.test>"},
                                                  path=reply.path).data, policy=email.policy.default)
    assert (single["Message-ID"], single["X-Thread-ID"]) == ("<def@other.test>", "<abc@other.test>")
    twin = WorldItem("Mail/d.eml", "w", {**EMAILS[3].metadata, "message_id": "<abc@other.test>"})
    with pytest.raises(RenderError, match=r"Mail/d\.eml: has the Message-ID <abc@other\.test> of Mail/a\.eml"):
        render_mbox([root, twin])
    with pytest.raises(RenderError, match="metadata 'message_id': 'abc' is not a Message-ID"):
        render_mbox([WorldItem("Mail/e.eml", "v", {**EMAILS[3].metadata, "message_id": "abc"})])


@pytest.mark.parametrize(("value", "example"), [("2025-03-15", "2025-03-15T00:00:00+00:00"),
                                              ("2025-03-15T09:30", "2025-03-15T09:30:00+00:00")])
def test_a_date_without_its_offset_is_refused_with_an_example_that_parses(value, example):
    """The example in the refusal, typed in as it is, is accepted (it used to append "+00:00"
    to a date alone, which does not parse either)."""
    import datetime as dt

    from authoring.rendering.base import RenderError
    from authoring.rendering.headers import parse_when

    with pytest.raises(RenderError, match=re.escape(f"e.g. {example}.")):
        parse_when(value, "date")
    assert parse_when(example, "date") == dt.datetime.fromisoformat(example)
