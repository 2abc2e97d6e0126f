"""An author's hand in a sandbox: every write goes through the agent's own tools into the
overlay (the world is never touched), only an author of the project may make it, only in
a sandbox, and each change can be discarded on its own."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import Http404

from authoring.models import Document
from core.exceptions import ApplicationError, PermissionRefused
from tests.workspace.conftest import CALL, CHAT_ROOT, HANNAH, NOTES, REPLY2, ROOT, SIGNING, TOM
from workspace import services
from workspace.models import Overlay, OverlayEntry
from workspace.services import overlay_create
from workspace.tools import Workspace, execute

ICS = b"""BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//Test//EN\r
BEGIN:VEVENT\r
UID:kickoff@test.example\r
DTSTAMP:20260101T000000Z\r
SUMMARY:Kick-off\r
DTSTART:20260310T090000Z\r
DTEND:20260310T100000Z\r
END:VEVENT\r
END:VCALENDAR\r
"""


def world_snapshot(world):
    return list(Document.objects.filter(world=world).order_by("pk").values())


def entry(sandbox, path) -> OverlayEntry:
    return OverlayEntry.objects.get(overlay=sandbox, path=path)


@pytest.fixture
def sandbox(team, data_room):
    return overlay_create(world=data_room, user=team.author, label="Try the memo")


def test_mail_is_sent_and_answered_as_the_agent_would(team, data_room, sandbox):
    before = world_snapshot(data_room)
    path = services.sandbox_email_send(overlay=sandbox, user=team.author, to=[HANNAH], cc=[TOM], subject="Escrow",
                                       body="We propose 15%.")
    sent = entry(sandbox, path)
    assert path.startswith("Mail/Sent/") and path.endswith(" escrow") and sent.kind == "email" and sent.content == "We propose 15%."
    assert {k: sent.metadata[k] for k in ("from", "to", "cc", "subject")} == {
        "from": "Agent <agent@taskwright.invalid>", "to": HANNAH, "cc": TOM, "subject": "Escrow"}
    # The agent's own call makes the same email (but for the second it is sent at).
    agents = overlay_create(world=data_room, user=team.author, purpose="rollout")
    assert not execute(workspace=Workspace(data_room, agents), name="send_email",
                       arguments={"to": [HANNAH], "cc": [TOM], "subject": "Escrow", "body": "We propose 15%."}).is_error
    theirs = OverlayEntry.objects.get(overlay=agents)
    assert ({**theirs.metadata, "date": ""}, theirs.content) == ({**sent.metadata, "date": ""}, sent.content)

    reply = services.sandbox_email_reply(overlay=sandbox, user=team.author, email_id=REPLY2, body="Fine by us.", reply_all=True)
    answered = entry(sandbox, reply)
    assert answered.metadata["thread"] == ROOT and answered.metadata["subject"] == "RE: RE: Price"
    assert answered.metadata["to"] == "Priya Raman <p.raman@harlowfinch.com>" and "tom@marshwebb.example" in answered.metadata["cc"]
    assert answered.content.startswith("Fine by us.\n\nOn 2026-02-22T08:00:00+00:00, Priya Raman")
    assert world_snapshot(data_room) == before


def test_chat_is_posted_and_answered_in_its_thread(team, sandbox):
    posted = services.sandbox_chat_post(overlay=sandbox, user=team.author, channel="deal-team", text="The memo is in Work/.")
    assert entry(sandbox, posted).metadata["channel"] == "#deal-team" and posted.startswith("Chat/deal-team/")
    reply = services.sandbox_chat_reply(overlay=sandbox, user=team.author, message_id=CHAT_ROOT, text="Kestrel said yes.")
    assert entry(sandbox, reply).metadata["thread"] == CHAT_ROOT
    assert [m.text for m in Workspace(sandbox.world, sandbox).chat_thread(CHAT_ROOT)][-1] == "Kestrel said yes."
    with pytest.raises(ApplicationError, match="No channel 'nowhere'"):
        services.sandbox_chat_post(overlay=sandbox, user=team.author, channel="nowhere", text="x")


def test_events_are_added_edited_and_deleted(team, sandbox):
    call = services.sandbox_event_create(overlay=sandbox, user=team.author, subject="Escrow call", start="2026-03-05T09:00:00+01:00",
                                         end="2026-03-05T09:30:00+01:00", attendees=[HANNAH], location="Room 4")
    assert entry(sandbox, call).metadata == {"subject": "Escrow call", "start": "2026-03-05T09:00:00+01:00",
                                             "end": "2026-03-05T09:30:00+01:00", "location": "Room 4", "attendees": HANNAH}
    offsite = services.sandbox_event_create(overlay=sandbox, user=team.author, subject="Offsite", start="2026-03-09",
                                            end="2026-03-10", all_day=True)
    assert {k: entry(sandbox, offsite).metadata[k] for k in ("start", "end", "all_day")} == {
        "start": "2026-03-09T00:00:00+00:00", "end": "2026-03-11T00:00:00+00:00", "all_day": "true"}  # both days, DTEND exclusive
    ws = Workspace(sandbox.world, sandbox)
    assert ws.event(offsite).all_day and not ws.event(call).all_day

    services.sandbox_event_update(overlay=sandbox, user=team.author, event_id=SIGNING, subject="Signing", start="2026-03-16T10:00:00+00:00",
                                  end="2026-03-16T12:00:00+00:00", location="Video call", attendees=[TOM], description="Sign it.")
    signing = entry(sandbox, SIGNING)
    assert (signing.metadata["start"], signing.metadata["location"], signing.content) == ("2026-03-16T10:00:00+00:00", "Video call",
                                                                                          "Sign it.")
    with pytest.raises(ApplicationError, match="before 'start'"):
        services.sandbox_event_update(overlay=sandbox, user=team.author, event_id=SIGNING, subject="Signing",
                                      start="2026-03-16T10:00:00+00:00", end="2026-03-16T09:00:00+00:00")

    services.sandbox_event_delete(overlay=sandbox, user=team.author, event_id=CALL)  # the world's: hidden
    assert entry(sandbox, CALL).action == "delete"
    services.sandbox_event_delete(overlay=sandbox, user=team.author, event_id=call)  # the sandbox's own: gone
    assert not OverlayEntry.objects.filter(overlay=sandbox, path=call).exists()
    with pytest.raises(ApplicationError, match="no such event"):
        services.sandbox_event_delete(overlay=sandbox, user=team.author, event_id=call)


def test_files_are_uploaded_edited_and_deleted(team, data_room, sandbox):
    before = world_snapshot(data_room)
    memo = services.sandbox_file_upload(overlay=sandbox, user=team.author, uploaded_file=SimpleUploadedFile("Memo.md", b"# Memo\n\nHi."))
    assert (memo.format, memo.paths, memo.left) == ("md", ["Uploads/Memo.md"], [])
    assert (entry(sandbox, "Uploads/Memo.md").format, entry(sandbox, "Uploads/Memo.md").content) == ("md", "# Memo\n\nHi.\n")
    again = services.sandbox_file_upload(overlay=sandbox, user=team.author, uploaded_file=SimpleUploadedFile("Memo.md", b"v2"))
    assert again.paths == ["Uploads/Memo (2).md"]  # the sandbox's file is not overwritten
    into = services.sandbox_file_upload(overlay=sandbox, user=team.author, uploaded_file=SimpleUploadedFile("Notes.md", b"mine"),
                                        folder="Deal")
    assert into.paths == ["Deal/Notes (2).md"]  # nor the world's
    calendar = services.sandbox_file_upload(overlay=sandbox, user=team.author, uploaded_file=SimpleUploadedFile("deal.ics", ICS))
    assert calendar.format == "ics" and Workspace(data_room, sandbox).event(calendar.paths[0]).subject == "Kick-off"
    with pytest.raises(ApplicationError):
        services.sandbox_file_upload(overlay=sandbox, user=team.author, uploaded_file=SimpleUploadedFile("x.bin", b"\x00\x01\x02" * 50))

    services.sandbox_file_write(overlay=sandbox, user=team.author, path="Deal/Notes.md", content=NOTES.replace("10%", "15%"))
    assert "15%" in entry(sandbox, "Deal/Notes.md").content
    with pytest.raises(ApplicationError, match="Cannot write"):
        services.sandbox_file_write(overlay=sandbox, user=team.author, path="Legal/Opinions/Opinion.pdf", content="x")
    services.sandbox_file_delete(overlay=sandbox, user=team.author, path="Finance/Payments.csv")
    assert entry(sandbox, "Finance/Payments.csv").action == "delete"
    assert world_snapshot(data_room) == before


def test_a_change_is_discarded_on_its_own(team, data_room, sandbox):
    services.sandbox_file_write(overlay=sandbox, user=team.author, path="Deal/Notes.md", content="Changed.")
    services.sandbox_file_delete(overlay=sandbox, user=team.author, path="Finance/Payments.csv")
    sent = services.sandbox_email_send(overlay=sandbox, user=team.author, to=[HANNAH], cc=[], subject="Hi", body="x")
    changed_at = Overlay.objects.get(pk=sandbox.pk).changed_at

    services.overlay_entry_discard(overlay=sandbox, user=team.author, path="Deal/Notes.md")
    services.overlay_entry_discard(overlay=sandbox, user=team.author, path="Finance/Payments.csv")
    ws = Workspace(data_room, sandbox)
    assert ws.get("Deal/Notes.md").content == NOTES and ws.get("Finance/Payments.csv") is not None  # the world's versions again
    assert list(OverlayEntry.objects.filter(overlay=sandbox).values_list("path", flat=True)) == [sent]
    assert Overlay.objects.get(pk=sandbox.pk).changed_at > changed_at
    with pytest.raises(ApplicationError, match="no longer in the sandbox"):
        services.overlay_entry_discard(overlay=sandbox, user=team.author, path="Deal/Notes.md")


WRITES = {
    "send": lambda o, u: services.sandbox_email_send(overlay=o, user=u, to=[HANNAH], cc=[], subject="x", body="x"),
    "reply": lambda o, u: services.sandbox_email_reply(overlay=o, user=u, email_id=ROOT, body="x"),
    "post": lambda o, u: services.sandbox_chat_post(overlay=o, user=u, channel="finance", text="x"),
    "chat reply": lambda o, u: services.sandbox_chat_reply(overlay=o, user=u, message_id=CHAT_ROOT, text="x"),
    "add event": lambda o, u: services.sandbox_event_create(overlay=o, user=u, subject="x", start="2026-03-06T09:00:00+00:00",
                                                            end="2026-03-06T10:00:00+00:00"),
    "edit event": lambda o, u: services.sandbox_event_update(overlay=o, user=u, event_id=CALL, subject="x",
                                                             start="2026-03-06T09:00:00+00:00", end="2026-03-06T10:00:00+00:00"),
    "delete event": lambda o, u: services.sandbox_event_delete(overlay=o, user=u, event_id=CALL),
    "upload": lambda o, u: services.sandbox_file_upload(overlay=o, user=u, uploaded_file=SimpleUploadedFile("a.md", b"a")),
    "edit file": lambda o, u: services.sandbox_file_write(overlay=o, user=u, path="Deal/Notes.md", content="x"),
    "delete file": lambda o, u: services.sandbox_file_delete(overlay=o, user=u, path="Deal/Notes.md"),
    "discard": lambda o, u: services.overlay_entry_discard(overlay=o, user=u, path="Work/Seed.md"),
    "delete sandbox": lambda o, u: services.sandbox_delete(overlay=o, user=u),
}


def test_only_an_author_writes_and_only_in_a_sandbox(team, other_team, data_room, sandbox, overlay):
    for target in (sandbox, overlay):  # something to discard in both
        OverlayEntry.objects.create(overlay=target, path="Work/Seed.md", format="md", content="seed")
    for name, write in WRITES.items():  # one world for all of them: the suite's time is counted
        with pytest.raises(PermissionRefused):
            write(sandbox, team.reviewer)
        with pytest.raises(Http404):
            write(sandbox, other_team.admin)
        with pytest.raises(ApplicationError, match="trial run"):
            write(overlay, team.admin)
        assert list(OverlayEntry.objects.values_list("path", flat=True)) == ["Work/Seed.md", "Work/Seed.md"], name
    assert Overlay.objects.filter(pk__in=[sandbox.pk, overlay.pk]).count() == 2
    WRITES["send"](sandbox, team.admin)  # an admin authors too
    assert OverlayEntry.objects.filter(overlay=sandbox).count() == 2
