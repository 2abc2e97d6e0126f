"""Mail tools: list, search, read, threads; send, reply and forward into the overlay."""

import datetime as dt
import re

from authoring import services as authoring_services
from authoring.models import Document, DocumentKind
from tests.workspace.conftest import HANNAH, LEASE, PRIYA, REPLY1, REPLY2, ROOT, TOM, Runner
from workspace.models import OverlayEntry
from workspace.services import overlay_create
from workspace.tools import Workspace

SENT = re.compile(r"^Mail/Sent/\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ [a-z0-9-]+$")


def ids(listing):
    return [e["id"] for e in listing["emails"]]


def test_list_emails_newest_first_with_paging(run):
    listing = run.json("list_emails")
    assert listing["total"] == 4 and listing["folders"] == ["Mail/Inbox"]
    assert ids(listing) == [LEASE, REPLY2, REPLY1, ROOT]
    assert listing["emails"][0] == {
        "id": LEASE, "date": "2026-02-25T14:00:00+00:00", "from": TOM, "to": PRIYA, "subject": "Reading lease consent",
        "thread": LEASE, "snippet": "See the notes attached about the Reading lease.", "attachments": ["Deal/Notes.md"],
    }
    first = run.json("list_emails", {"limit": 3})
    assert ids(first) == [LEASE, REPLY2, REPLY1] and first["next_offset"] == 3
    rest = run.json("list_emails", {"limit": 3, "offset": 3})
    assert ids(rest) == [ROOT] and "next_offset" not in rest
    assert ids(run.json("list_emails", {"folder": "Mail/Inbox"})) == [LEASE, REPLY2, REPLY1, ROOT]
    assert run("list_emails", {"folder": "Mail/Drafts"}, error=True) == "No mail folder 'Mail/Drafts'. Mail folders: Mail/Inbox."


def test_search_emails_by_each_field(run):
    assert ids(run.json("search_emails", {"sender": "HANNAH"})) == [REPLY1]
    assert ids(run.json("search_emails", {"recipient": "tom@marshwebb"})) == [REPLY2, REPLY1]  # cc counts
    assert ids(run.json("search_emails", {"subject": "price"})) == [REPLY2, REPLY1, ROOT]
    assert ids(run.json("search_emails", {"text": "escrow"})) == [REPLY2, REPLY1]
    assert ids(run.json("search_emails", {"text": "reading consent"})) == [LEASE]
    assert ids(run.json("search_emails", {"sender": "priya", "text": "escrow"})) == [REPLY2]
    assert run.json("search_emails", {"text": "zebra"})["total"] == 0


def test_search_emails_by_date_range(run):
    # REPLY1 is 10:30+01:00 on the 21st, i.e. 09:30 UTC; a bare date_to includes its whole day.
    assert ids(run.json("search_emails", {"date_from": "2026-02-21", "date_to": "2026-02-22"})) == [REPLY2, REPLY1]
    assert ids(run.json("search_emails", {"date_from": "2026-02-21T09:45:00+00:00"})) == [LEASE, REPLY2]
    assert ids(run.json("search_emails", {"date_to": "2026-02-21T09:30:00Z"})) == [REPLY1, ROOT]
    text = run("search_emails", {"date_from": "last week"}, error=True)
    assert text.startswith("date_from 'last week' is not a date.")


def test_read_email(run):
    assert run("read_email", {"id": REPLY1}) == (
        f"Email id: {REPLY1}\nFrom: {HANNAH}\nTo: {PRIYA}\nCc: {TOM}\nDate: 2026-02-21T10:30:00+01:00\nSubject: RE: Price\n"
        f"Thread: {ROOT} (3 emails; call read_thread to read them all)\n\nThe price is $12m with escrow."
    )
    assert "Attachments: Deal/Notes.md (data-room files: read them with read_file)" in run("read_email", {"id": LEASE})


def test_read_thread_returns_the_three_emails_in_date_order_from_any_member(run):
    for member in (ROOT, REPLY1, REPLY2):
        text = run("read_thread", {"id": member})
        assert text.startswith(f"Thread {ROOT}: 3 emails, oldest first\n\n")
        positions = [text.index(f"Email id: {i}\n") for i in (ROOT, REPLY1, REPLY2)]
        assert positions == sorted(positions)
        assert text.count("Email id: ") == 3
    assert run("read_thread", {"id": LEASE}).startswith(f"Thread {LEASE}: 1 email, oldest first")


def test_read_email_unknown_id(run):
    text = run("read_email", {"id": "Mail/Inbox/2026-02-20 Prize"}, error=True)
    assert text.startswith("No email with id 'Mail/Inbox/2026-02-20 Prize'. Did you mean: 'Mail/Inbox/2026-02-20 Price', ")
    assert text.endswith("Use list_emails or search_emails to find emails.")
    assert run("read_email", {"id": "Deal/Notes.md"}, error=True).startswith("No email with id 'Deal/Notes.md'.")


def test_send_email_lands_in_the_overlay_only(run, ws, data_room):
    documents_before = Document.objects.filter(world=data_room).count()
    text = run("send_email", {"to": ["Priya Raman <p.raman@harlowfinch.com>"], "cc": ["tom@marshwebb.example"],
                              "subject": "Escrow: next steps", "body": "Priya,\n\nSee the notes.", "attachments": ["Deal/Notes.md"]})
    path = text.splitlines()[0].removeprefix("Sent. Email id: ")
    assert SENT.match(path) and path.endswith(" escrow-next-steps")
    entry = OverlayEntry.objects.get(overlay=ws.overlay, path=path)
    assert entry.kind == DocumentKind.EMAIL and entry.action == "upsert" and entry.content == "Priya,\n\nSee the notes."
    assert entry.metadata["from"] == "Agent <agent@taskwright.invalid>"
    assert entry.metadata["to"] == PRIYA and entry.metadata["cc"] == "tom@marshwebb.example"
    assert entry.metadata["subject"] == "Escrow: next steps" and entry.metadata["attachments"] == ["Deal/Notes.md"]
    sent_at = dt.datetime.fromisoformat(entry.metadata["date"])
    assert sent_at.utcoffset() == dt.timedelta(0) and entry.metadata["date"].endswith("+00:00")
    assert "thread" not in entry.metadata
    assert Document.objects.filter(world=data_room).count() == documents_before

    listing = run.json("list_emails", {"folder": "Mail/Sent"})
    assert ids(listing) == [path] and listing["folders"] == ["Mail/Inbox", "Mail/Sent"]
    # a fresh workspace on the same overlay reads it back from the database
    assert "Escrow: next steps" in Runner(Workspace(data_room, ws.overlay))("read_email", {"id": path})
    assert Runner(Workspace(data_room))("read_email", {"id": path}, error=True).startswith("No email")


def test_send_email_refuses_bad_recipients_and_attachments(run, ws):
    text = run("send_email", {"to": ["Priya"], "subject": "x", "body": "y"}, error=True)
    assert "'Priya' is not an email address" in text
    text = run("send_email", {"to": [PRIYA], "subject": "x", "body": "y", "attachments": ["Deal/Nope.md"]}, error=True)
    assert text.startswith("Attachment 'Deal/Nope.md' is not a file in the data room")
    assert run("send_email", {"to": [], "subject": "x", "body": "y"}, error=True).startswith(
        "Invalid arguments for send_email: to needs at least 1 item."
    )
    assert not OverlayEntry.objects.filter(overlay=ws.overlay).exists()


def test_reply_and_reply_all_join_the_thread(run, ws):
    text = run("reply_email", {"id": REPLY1, "body": "Thanks Hannah."})
    reply = text.splitlines()[0].removeprefix("Sent. Email id: ")
    meta = OverlayEntry.objects.get(overlay=ws.overlay, path=reply).metadata
    assert meta["to"] == HANNAH and "cc" not in meta and meta["subject"] == "RE: Price" and meta["thread"] == ROOT
    body = OverlayEntry.objects.get(overlay=ws.overlay, path=reply).content
    assert body == f"Thanks Hannah.\n\nOn 2026-02-21T10:30:00+01:00, {HANNAH} wrote:\n> The price is $12m with escrow.\n"

    text = run("reply_email", {"id": ROOT, "body": "All: agreed.", "reply_all": True})
    reply_all = text.splitlines()[0].removeprefix("Sent. Email id: ")
    meta = OverlayEntry.objects.get(overlay=ws.overlay, path=reply_all).metadata
    assert meta["subject"] == "Re: Price" and meta["to"] == PRIYA and meta["cc"] == HANNAH

    thread = run("read_thread", {"id": REPLY2})
    assert thread.startswith(f"Thread {ROOT}: 5 emails, oldest first")


def test_reply_all_leaves_out_the_actor(team, data_room):
    overlay = overlay_create(world=data_room, user=team.author, actor_name="Priya Raman", actor_email="p.raman@harlowfinch.com")
    run = Runner(Workspace(data_room, overlay))
    text = run("reply_email", {"id": REPLY1, "body": "Noted.", "reply_all": True})
    assert f"From: {PRIYA}\nTo: {HANNAH}\nCc: {TOM}\n" in text
    # replying to one's own email goes to its recipients
    assert f"To: {HANNAH}\n" in run("reply_email", {"id": ROOT, "body": "Chasing."})


def test_a_reply_is_never_dated_before_what_it_answers(team, data_room, ws):
    authoring_services.document_create(
        world=data_room, user=team.author, path="Mail/Inbox/2099 Future", kind=DocumentKind.EMAIL, content="From the future",
        metadata={"from": TOM, "to": PRIYA, "date": "2099-01-01T12:00:00+00:00", "subject": "Future"},
    )
    run = Runner(Workspace(data_room, ws.overlay))
    text = run("reply_email", {"id": "Mail/Inbox/2099 Future", "body": "ok"})
    assert "Date: 2099-01-01T12:01:00+00:00" in text


def test_forward_keeps_attachments_and_quotes_the_original(run, ws):
    text = run("forward_email", {"id": LEASE, "to": ["Ben Osei <ben@harlowfinch.com>"], "body": "FYI"})
    path = text.splitlines()[0].removeprefix("Sent. Email id: ")
    entry = OverlayEntry.objects.get(overlay=ws.overlay, path=path)
    assert entry.metadata["subject"] == "Fwd: Reading lease consent"
    assert entry.metadata["attachments"] == ["Deal/Notes.md"] and entry.metadata["thread"] == LEASE
    assert entry.content.startswith("FYI\n\n---------- Forwarded message ----------\nFrom: Tom Achterberg")
    assert entry.content.endswith("See the notes attached about the Reading lease.\n")


def test_a_bare_date_is_the_day_on_the_emails_own_clock(data_room, run):
    """An email sent at 23:30-08:00 on 3 March is on the 3rd (the 4th in UTC): searching the
    3rd missed it and searching the 4th found it."""
    email = Document.objects.get(world=data_room, path=LEASE)
    Document.objects.filter(pk=email.pk).update(metadata={**email.metadata, "date": "2026-03-03T23:30:00-08:00"})
    on = {day: ids(run.json("search_emails", {"date_from": day, "date_to": day})) for day in ("2026-03-03", "2026-03-04")}
    assert on == {"2026-03-03": [LEASE], "2026-03-04": []}
    # a moment is a moment: 23:30-08:00 is after 2026-03-04T06:00Z
    assert ids(run.json("search_emails", {"date_from": "2026-03-04T06:00:00+00:00"})) == [LEASE]


def test_an_attachment_whose_path_holds_a_comma_stays_one_attachment(run):
    run("write_file", {"path": "Finance/Budget, FY2026.md", "content": "# Budget\n\nTotal: $1m."})
    sent = run("send_email", {"to": ["ann@acme.test"], "subject": "Budget", "body": "Attached.",
                              "attachments": ["Finance/Budget, FY2026.md"]})
    email_id = sent.split("Email id: ")[1].split("\n")[0]
    assert run.json("search_emails", {"subject": "Budget"})["emails"][0]["attachments"] == ["Finance/Budget, FY2026.md"]
    assert "Attachments: Finance/Budget, FY2026.md (data-room files" in run("read_email", {"id": email_id})
    forwarded = run("forward_email", {"id": email_id, "to": ["bo@beta.test"]})
    forward_id = forwarded.split("Email id: ")[1].split("\n")[0]
    assert run.json("search_emails", {"subject": "Fwd: Budget"})["emails"][0]["attachments"] == ["Finance/Budget, FY2026.md"], forward_id
