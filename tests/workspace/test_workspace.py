"""The Workspace read API the tools, the MCP server and the replica UI share."""

import datetime as dt

from tests.workspace.conftest import CALL, CHAT_FINANCE, CHAT_OTHER, CHAT_REPLY, CHAT_ROOT, LEASE, REPLY1, REPLY2, ROOT, SIGNING


def test_merged_items_and_change_markers(run, ws):
    run("write_file", {"path": "Deal/Notes.md", "content": "changed"})
    run("write_file", {"path": "Work/New.md", "content": "new"})
    run("delete_file", {"path": "Finance/Payments.csv"})
    assert ws.get("Deal/Notes.md").change == "modified"
    assert ws.get("Work/New.md").change == "added"
    assert ws.get("Deal/Letter of intent.docx").change == ""
    assert ws.get("Finance/Payments.csv") is None and ws.deleted_paths == ["Finance/Payments.csv"]
    assert ws.world_item("Finance/Payments.csv").content.startswith("Date,Payee")
    assert ws.folders() == ["Board", "Deal", "Finance", "Inbox", "Legal", "Legal/Opinions", "Work"]
    assert [i.path for i in ws.files("Deal", recursive=False)] == ["Deal/Letter of intent.docx", "Deal/Notes.md"]
    assert ws.get("Deal/Notes.md", "email") is None


def test_emails_threads_chat_and_events(ws):
    assert [e.id for e in ws.emails()] == [ROOT, REPLY1, REPLY2, LEASE]
    assert [e.id for e in ws.email_thread(REPLY2)] == [ROOT, REPLY1, REPLY2]
    assert ws.email(REPLY1).date == dt.datetime(2026, 2, 21, 9, 30, tzinfo=dt.UTC)
    assert ws.email(LEASE).attachments == ["Deal/Notes.md"] and ws.email(LEASE).folder == "Mail/Inbox"
    assert [m.id for m in ws.chat_messages()] == [CHAT_FINANCE, CHAT_ROOT, CHAT_REPLY, CHAT_OTHER]
    assert [m.id for m in ws.chat_messages("#DEAL-team")] == [CHAT_ROOT, CHAT_REPLY, CHAT_OTHER]
    assert [m.id for m in ws.chat_thread(CHAT_REPLY)] == [CHAT_ROOT, CHAT_REPLY]
    assert [c["channel"] for c in ws.channels()] == ["#deal-team", "finance"]
    assert [e.id for e in ws.events()] == [CALL, SIGNING]
    assert ws.event(CALL).attendees == ["Priya Raman <p.raman@harlowfinch.com>", "Hannah Cole <hannah.cole@beta.example>"]


def test_lenient_reading_of_hand_written_metadata(team, data_room):
    """World content written by hand (as in the demo) is read, never a crash: ';' between
    attendees, 'author' for a chat sender, a missing date, a thread link that loops."""
    from authoring import services as authoring_services
    from tests.workspace.conftest import Runner
    from workspace.tools import Workspace

    authoring_services.document_create(world=data_room, user=team.author, path="Calendar/Loose", kind="event", content="",
                                       metadata={"subject": "Loose", "attendees": "Priya Raman; Ben Osei"})
    authoring_services.document_create(world=data_room, user=team.author, path="Chat/x/Loose", kind="chat", content="hi",
                                       metadata={"channel": "#x", "author": "Ben Osei (associate)"})
    authoring_services.document_create(world=data_room, user=team.author, path="Mail/A", kind="email", content="a",
                                       metadata={"subject": "A", "thread": "Mail/B"})
    authoring_services.document_create(world=data_room, user=team.author, path="Mail/B", kind="email", content="b",
                                       metadata={"subject": "B", "thread": "Mail/A"})
    ws = Workspace(data_room)
    loose = ws.event("Calendar/Loose")
    assert loose.attendees == ["Priya Raman", "Ben Osei"] and loose.start is None
    assert [e.id for e in ws.events()][-1] == "Calendar/Loose"  # undated sorts last
    assert ws.chat_message("Chat/x/Loose").sender == "Ben Osei (associate)"
    assert ws.email("Mail/A").thread == ws.email("Mail/B").thread == "Mail/A"
    assert [e.id for e in ws.email_thread("Mail/B")] == ["Mail/A", "Mail/B"]

    run = Runner(ws)  # and every read tool copes with it
    assert "Mail/A" in run("list_emails") and "Calendar/Loose" in run("list_events")
    assert run("read_thread", {"id": "Mail/A"}).startswith("Thread Mail/A: 2 emails")
    assert run.json("read_channel", {"channel": "x"})["messages"][0]["from"] == "Ben Osei (associate)"
    assert run.json("list_events", {"start": "2026-01-01"})["total"] == 2  # the undated event is outside any range


def test_updating_an_event_with_invalid_stored_metadata_says_which_field_to_pass(team, data_room, ws):
    from authoring import services as authoring_services
    from tests.workspace.conftest import Runner
    from workspace.tools import Workspace

    authoring_services.document_create(
        world=data_room, user=team.author, path="Calendar/Demo", kind="event", content="Agenda",
        metadata={"subject": "Call", "start": "2026-03-04T15:00:00+00:00", "end": "2026-03-04T16:00:00+00:00",
                  "attendees": "Priya Raman; Ben Osei"},
    )
    run = Runner(Workspace(data_room, ws.overlay))
    text = run("update_event", {"id": "Calendar/Demo", "location": "Room 2"}, error=True)
    assert text.startswith("metadata 'attendees': 'Priya Raman; Ben Osei' is not an email address")
    assert text.endswith("(This value is the event's own; pass attendees to replace it.)")
    assert (
        run.json("update_event", {"id": "Calendar/Demo", "location": "Room 2", "attendees": ["p@x.co"]})["updated"]["location"] == "Room 2"
    )
