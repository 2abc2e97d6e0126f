"""Overlays: who may create and read them, writes that never touch the world, deletes,
and the overlay's final state as a diff against the world."""

import json

import pytest
from django.http import Http404

from authoring.models import Document
from core.exceptions import ApplicationError
from tests import factories
from tests.workspace.conftest import LOI, NOTES, Runner
from workspace.models import Overlay, OverlayEntry
from workspace.selectors import overlay_diff, overlay_get_for_user, overlay_list_for_user
from workspace.services import overlay_create, overlay_delete
from workspace.tools import Workspace

NEW_LOI = LOI.replace("$12m", "$13m")


def world_snapshot(world):
    return list(Document.objects.filter(world=world).order_by("pk").values())


def test_overlay_create_defaults_and_roles(team, other_team, data_room):
    overlay = overlay_create(world=data_room, user=team.author)
    assert (overlay.purpose, overlay.label, overlay.actor_name, overlay.actor_email) == ("sandbox", "", "Agent", "agent@taskwright.invalid")
    assert overlay.created_by == team.author
    custom = overlay_create(world=data_room, user=team.admin, label="  trial   2 ", purpose="rollout",
                            actor_name="Priya Raman", actor_email="p.raman@harlowfinch.com")
    assert (custom.label, custom.purpose, custom.actor_name) == ("trial 2", "rollout", "Priya Raman")
    with pytest.raises(ApplicationError, match="cannot edit content"):
        overlay_create(world=data_room, user=team.reviewer)
    with pytest.raises(Http404):
        overlay_create(world=data_room, user=other_team.author)
    with pytest.raises(ApplicationError, match="Unknown overlay purpose"):
        overlay_create(world=data_room, user=team.author, purpose="grading")
    with pytest.raises(ApplicationError, match="not a valid email address"):
        overlay_create(world=data_room, user=team.author, actor_email="agent")
    with pytest.raises(ApplicationError, match="actor's name"):
        overlay_create(world=data_room, user=team.author, actor_name="Eve <eve@x.co>")


def test_overlay_get_for_user_is_scoped_by_membership(team, other_team, overlay):
    assert overlay_get_for_user(user=team.reviewer, pk=overlay.pk) == overlay
    assert list(overlay_list_for_user(user=team.author, world_id=overlay.world_id)) == [overlay]
    with pytest.raises(Http404):
        overlay_get_for_user(user=other_team.admin, pk=overlay.pk)
    assert not overlay_list_for_user(user=other_team.admin).exists()
    assert not overlay_list_for_user(user=factories.user()).exists()


def test_overlay_delete(team, data_room, overlay, run):
    before = world_snapshot(data_room)
    run("write_file", {"path": "Work/A.md", "content": "a"})
    with pytest.raises(ApplicationError):
        overlay_delete(overlay=overlay, user=team.reviewer)
    overlay_delete(overlay=overlay, user=team.author)
    assert not Overlay.objects.filter(pk=overlay.pk).exists() and not OverlayEntry.objects.exists()
    assert world_snapshot(data_room) == before


def test_writes_land_in_the_overlay_and_never_in_the_world(run, ws, data_room):
    before = world_snapshot(data_room)
    run("write_file", {"path": "Deal/Letter of intent.docx", "content": NEW_LOI})
    run(
        "write_file",
        {"path": "Work/Summary.xlsx", "content": "## Sheet: S\n|   | A | B |\n|---|---|---|\n| 1 | Price | 13 |\n| 2 | x2 | =B1*2 |\n"},
    )
    run("delete_file", {"path": "Deal/Notes.md"})
    run("send_email", {"to": ["a@b.co"], "subject": "Hello", "body": "Hi"})
    run("post_message", {"channel": "finance", "text": "Done"})
    run("create_event", {"subject": "Call", "start": "2026-03-06T09:00:00+00:00", "end": "2026-03-06T10:00:00+00:00"})
    run("update_event", {"id": "Calendar/2026-03-04 Diligence call", "location": "Room 1"})
    assert world_snapshot(data_room) == before
    assert OverlayEntry.objects.filter(overlay=ws.overlay).count() == 7

    # This workspace, and a fresh one on the same overlay, see the changes; the world does not.
    for view in (run, Runner(Workspace(data_room, ws.overlay))):
        assert "$13m" in view("read_file", {"path": "Deal/Letter of intent.docx"})
        assert "x2 | 26 |" in view("read_file", {"path": "Work/Summary.xlsx"})
        assert view("read_file", {"path": "Deal/Notes.md"}, error=True).startswith("No file at")
        assert [f["path"] for f in view.json("list_files", {"folder": "Deal"})["files"]] == ["Deal/Letter of intent.docx"]
    world = Runner(Workspace(data_room))
    assert "$12m" in world("read_file", {"path": "Deal/Letter of intent.docx"})
    assert world("read_file", {"path": "Deal/Notes.md"}).endswith(NOTES)


def test_delete_then_recreate_and_delete_an_added_file(run, ws):
    run("delete_file", {"path": "Deal/Notes.md"})
    assert OverlayEntry.objects.get(overlay=ws.overlay, path="Deal/Notes.md").action == "delete"
    assert run("delete_file", {"path": "Deal/Notes.md"}, error=True).startswith("No file at")
    run("write_file", {"path": "Deal/Notes.md", "content": "# New notes\n"})
    assert run("read_file", {"path": "Deal/Notes.md"}).endswith("# New notes\n")
    assert OverlayEntry.objects.get(overlay=ws.overlay, path="Deal/Notes.md").action == "upsert"

    run("write_file", {"path": "Work/Draft.md", "content": "draft"})
    assert run("delete_file", {"path": "Work/Draft.md"}) == "Deleted Work/Draft.md."
    assert not OverlayEntry.objects.filter(overlay=ws.overlay, path="Work/Draft.md").exists()  # the world never had it
    assert run("read_file", {"path": "Work/Draft.md"}, error=True).startswith("No file at")


def test_write_file_reports_created_and_replaced(run):
    assert run("write_file", {"path": "Work/Notes.md", "content": "one"}) == "Created Work/Notes.md (md, 3 characters)."
    assert run("write_file", {"path": "Work/Notes.md", "content": "two!"}) == "Replaced Work/Notes.md (md, 4 characters)."
    assert run("write_file", {"path": "Deal/Notes.md", "content": "x"}) == "Replaced Deal/Notes.md (md, 1 character)."


def test_overlay_diff(run, ws):
    run("write_file", {"path": "Deal/Letter of intent.docx", "content": NEW_LOI})
    run("write_file", {"path": "Work/Memo.md", "content": "# Memo\n\nPrice is $13m.\n"})
    run("delete_file", {"path": "Deal/Notes.md"})
    run("write_file", {"path": "Finance/Payments.csv", "content": run.workspace.get("Finance/Payments.csv").content})  # unchanged
    sent = run("send_email", {"to": ["a@b.co"], "subject": "Hello", "body": "Hi there"}).splitlines()[0].removeprefix("Sent. Email id: ")
    run("update_event", {"id": "Calendar/2026-03-15 Signing", "location": "Video call"})

    changes = overlay_diff(overlay=ws.overlay)
    assert [(c.path, c.kind, c.action) for c in changes] == [
        ("Deal/Letter of intent.docx", "file", "modified"),
        ("Work/Memo.md", "file", "added"),
        ("Deal/Notes.md", "file", "deleted"),
        (sent, "email", "added"),
        ("Calendar/2026-03-15 Signing", "event", "modified"),
    ]
    loi, memo, notes, email, event = changes
    assert (loi.before, loi.after) == (LOI, NEW_LOI)
    assert loi.diff.startswith("--- world/Deal/Letter of intent.docx\n+++ overlay/Deal/Letter of intent.docx\n@@")
    assert "\n-Acme proposes to buy **Beta Ltd** for $12m.\n+Acme proposes to buy **Beta Ltd** for $13m.\n" in loi.diff
    assert "\n-| Price | $12m |\n+| Price | $13m |" in loi.diff
    assert memo.before == "" and "+Price is $13m." in memo.diff
    assert (notes.before, notes.after) == (NOTES, "") and "-The escrow is 10% of the price." in notes.diff
    assert email.after.startswith("Subject: Hello\nFrom: Agent <agent@taskwright.invalid>\nTo: a@b.co\nDate: ")
    assert email.after.endswith("\n\nHi there")
    assert "-Location: Harlow & Finch, London\n+Location: Video call" in event.diff


def test_overlay_entry_limit(run, ws, monkeypatch):
    from workspace import services

    monkeypatch.setattr(services, "MAX_OVERLAY_ENTRIES", 2)
    run("write_file", {"path": "Work/1.md", "content": "1"})
    run("write_file", {"path": "Work/2.md", "content": "2"})
    assert run("write_file", {"path": "Work/2.md", "content": "2b"}).startswith("Replaced")  # same path: no new entry
    assert (
        run("write_file", {"path": "Work/3.md", "content": "3"}, error=True)
        == "This workspace already holds 2 changes; no more can be made."
    )


def test_every_change_of_an_overlay_moves_its_changed_at(run, ws):
    """Removing a file only the overlay added leaves no entry: the overlay's own mark is what shows it changed."""
    def changed_at():
        return Overlay.objects.get(pk=ws.overlay.pk).changed_at

    assert changed_at() is None
    marks = []
    for name, arguments in [("write_file", {"path": "Work/Draft.md", "content": "draft"}),
                            ("delete_file", {"path": "Work/Draft.md"}),
                            ("delete_file", {"path": "Deal/Notes.md"})]:
        run(name, arguments)
        marks.append(changed_at())
    assert None not in marks and marks == sorted(marks) and len(set(marks)) == 3
    run("read_file", {"path": "Deal/Letter of intent.docx"})
    run("delete_file", {"path": "Work/Draft.md"}, error=True)  # nothing there: nothing changed
    assert changed_at() == marks[-1]


def test_the_migration_marks_existing_overlays_by_their_newest_entry(ws, data_room):
    import importlib

    from django.apps import apps

    backfill = importlib.import_module("workspace.migrations.0002_overlay_changed_at").backfill
    OverlayEntry.objects.create(overlay=ws.overlay, path="A.md", kind="file", format="md", content="a")
    newest = OverlayEntry.objects.create(overlay=ws.overlay, path="B.md", kind="file", format="md", content="b")
    empty = Overlay.objects.create(world=data_room)
    Overlay.objects.update(changed_at=None)
    backfill(apps, None)
    assert Overlay.objects.get(pk=ws.overlay.pk).changed_at == newest.updated_at
    assert Overlay.objects.get(pk=empty.pk).changed_at is None


@pytest.mark.parametrize(("tool", "arguments"), [
    ("send_email", {"to": ["ann@acme.test"], "subject": "Status", "body": "From call {n}."}),
    ("post_message", {"channel": "deal-team", "text": "From call {n}."}),
    ("create_event", {"subject": "Sync", "start": "2026-03-20T09:00:00+00:00", "end": "2026-03-20T09:30:00+00:00",
                      "description": "From call {n}."}),
])
def test_two_calls_that_pick_the_same_new_path_both_keep_their_item(data_room, overlay, monkeypatch, tool, arguments):
    """An MCP client's parallel calls each read the overlay before either wrote: both chose
    the same path for their new email, message or event, and the second replaced the first
    while both answered that they had sent it. Now the second takes the next free path."""
    import workspace.tools.common as common

    now = common.timezone.now()
    monkeypatch.setattr(common.timezone, "now", lambda: now)  # both in the same second
    first, second = Runner(Workspace(data_room, overlay)), Runner(Workspace(data_room, overlay))
    first.workspace.paths(), second.workspace.paths()  # both loaded before either writes
    answers = [runner(tool, {k: v.format(n=n) if isinstance(v, str) else v for k, v in arguments.items()})
               for n, runner in ((1, first), (2, second))]
    entries = dict(OverlayEntry.objects.filter(overlay=overlay).values_list("path", "content"))
    assert sorted(entries.values()) == ["From call 1.", "From call 2."]
    named = [answer.split("Email id: ")[1].split("\n")[0] if answer.startswith("Sent.") else
             json.loads(answer).get("posted") or json.loads(answer)["created"]["id"] for answer in answers]
    assert [entries[path] for path in named] == ["From call 1.", "From call 2."]  # each answer names its own item
