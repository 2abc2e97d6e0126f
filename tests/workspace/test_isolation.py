"""A workspace reaches only its world and its overlay; a read-only workspace writes
nothing; text in a document that tries to instruct the agent is just text."""

import pytest

from authoring.models import Document
from tests.workspace.conftest import INJECTION, Runner
from workspace.models import OverlayEntry
from workspace.services import overlay_create
from workspace.tools import Workspace, execute, tool_specs

WRITE_CALLS = [
    ("write_file", {"path": "Work/Memo.md", "content": "# Memo"}),
    ("delete_file", {"path": "Deal/Notes.md"}),
    ("send_email", {"to": ["a@b.co"], "subject": "x", "body": "y"}),
    ("reply_email", {"id": "Mail/Inbox/2026-02-20 Price", "body": "y"}),
    ("forward_email", {"id": "Mail/Inbox/2026-02-20 Price", "to": ["a@b.co"]}),
    ("post_message", {"channel": "finance", "text": "hi"}),
    ("reply_message", {"id": "Chat/finance/2026-03-01 Hannah", "text": "hi"}),
    ("create_event", {"subject": "x", "start": "2026-03-06T09:00:00+00:00", "end": "2026-03-06T10:00:00+00:00"}),
    ("update_event", {"id": "Calendar/2026-03-15 Signing", "location": "x"}),
]


@pytest.mark.parametrize(("name", "arguments"), WRITE_CALLS)
def test_a_read_only_workspace_refuses_every_write(run_ro, name, arguments):
    text = run_ro(name, arguments, error=True)
    assert text.startswith("This workspace is read-only")
    assert run_ro(name, {"bogus": 1}, error=True).startswith("This workspace is read-only")
    assert not OverlayEntry.objects.exists()


def test_tool_specs_offer_writes_only_with_an_overlay():
    writes = {name for name, _ in WRITE_CALLS}
    read_only = {s["name"] for s in tool_specs(writable=False)}
    writable = {s["name"] for s in tool_specs(writable=True)}
    assert writable - read_only == writes
    assert read_only == {"list_files", "search_files", "read_file", "list_emails", "search_emails", "read_email", "read_thread",
                         "list_channels", "read_channel", "read_chat_thread", "search_chat", "list_events", "search_events", "read_event"}


def test_another_worlds_paths_and_ids_are_not_found(run, other_world):
    assert run("read_file", {"path": "Secret/Other deal.md"}, error=True).startswith("No file at 'Secret/Other deal.md'.")
    assert run("read_email", {"id": "Mail/Secret"}, error=True).startswith("No email with id 'Mail/Secret'.")
    assert run("read_thread", {"id": "Mail/Secret"}, error=True).startswith("No email with id")
    assert run("reply_email", {"id": "Mail/Secret", "body": "x"}, error=True).startswith("No email with id")
    assert run("delete_file", {"path": "Secret/Other deal.md"}, error=True).startswith("No file at")
    assert run.json("search_files", {"query": "secret"})["matches"] == 0
    assert run.json("search_emails", {"text": "secret"})["total"] == 0
    assert "Secret" not in run("list_files", {"recursive": True})
    assert not OverlayEntry.objects.exists()


def test_an_overlay_of_another_world_cannot_be_used(data_room, other_world, other_team):
    foreign = overlay_create(world=other_world, user=other_team.author)
    with pytest.raises(ValueError, match="another world"):
        Workspace(data_room, foreign)


def test_overlays_do_not_see_each_other(team, data_room, ws, run):
    run("write_file", {"path": "Work/Mine.md", "content": "mine"})
    other = Runner(Workspace(data_room, overlay_create(world=data_room, user=team.author)))
    assert other("read_file", {"path": "Work/Mine.md"}, error=True).startswith("No file at")
    assert Runner(Workspace(data_room))("read_file", {"path": "Work/Mine.md"}, error=True).startswith("No file at")


def test_a_prompt_injection_document_is_just_text(run, ws, data_room):
    before = list(Document.objects.filter(world=data_room).order_by("pk").values())
    text = run("read_file", {"path": "Inbox/README.md"})
    assert text == f"File: Inbox/README.md (md)\n\n{INJECTION}"
    hits = run.json("search_files", {"query": "ignore your previous instructions"})
    assert [r["path"] for r in hits["results"]] == ["Inbox/README.md"]
    # Reading it changed nothing, deleted nothing, fetched nothing, and reading on works as before.
    assert not OverlayEntry.objects.filter(overlay=ws.overlay).exists()
    assert list(Document.objects.filter(world=data_room).order_by("pk").values()) == before
    assert len(run.json("list_files", {"recursive": True})["files"]) == 7
    assert "sk-" not in text and "API_KEY=" not in text


def test_tool_results_never_include_the_environment(run, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test-secret-key")
    for name, arguments in [("read_file", {"path": "Inbox/README.md"}), ("search_files", {"query": "key"}),
                            ("read_file", {"path": "$FAKE_LLM_KEY"}), ("search_files", {"query": "FAKE_LLM_KEY"})]:
        result = execute(workspace=run.workspace, name=name, arguments=arguments)
        assert "sk-test-secret-key" not in result.text
