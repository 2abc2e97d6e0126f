"""No result floods a context window: long lists are cut to whole items (valid JSON) and
say how to get the rest; long texts come in pages."""

import json

from authoring import services as authoring_services
from authoring.models import DocumentKind
from tests.workspace.conftest import Runner
from workspace.tools import Workspace
from workspace.tools.base import JSON_BUDGET, MAX_RESULT_CHARS

CROWD = ", ".join(f"Person {n} <person{n}@example.com>" for n in range(25))


def crowded_world(team):
    world = authoring_services.world_create(project_id=team.project.pk, user=team.author, title="Crowded")
    for n in range(40):
        authoring_services.document_create(
            world=world, user=team.author, path=f"Mail/Email {n:02d}", kind=DocumentKind.EMAIL, content="x" * 500,
            metadata={"from": "a@example.com", "to": CROWD, "date": f"2026-01-01T10:{n:02d}:00+00:00", "subject": f"S{n}"},
        )
    for n in range(30):
        metadata = {"channel": "busy", "from": "b@example.com", "date": f"2026-02-01T10:{n:02d}:00+00:00"}
        if n:
            metadata["thread"] = "Chat/busy/00"
        authoring_services.document_create(world=world, user=team.author, path=f"Chat/busy/{n:02d}", kind=DocumentKind.CHAT,
                                           content=f"message {n} " + "y" * 3000, metadata=metadata)
    return world


def test_long_lists_are_cut_to_whole_items_with_a_way_on(team):
    run = Runner(Workspace(crowded_world(team)))

    text = run("list_emails", {"limit": 100})
    assert len(text) <= JSON_BUDGET
    listing = json.loads(text)
    shown = len(listing["emails"])
    assert 0 < shown < 40 and listing["next_offset"] == shown
    seen = [e["id"] for e in listing["emails"]]
    while "next_offset" in listing:
        listing = json.loads(run("list_emails", {"limit": 100, "offset": listing["next_offset"]}))
        seen += [e["id"] for e in listing["emails"]]
    assert sorted(seen) == [f"Mail/Email {n:02d}" for n in range(40)]

    channel = json.loads(run("read_channel", {"channel": "busy", "limit": 100}))
    assert channel["messages"][-1]["id"] == "Chat/busy/29"  # the most recent are kept
    assert channel["earlier_messages"] == 30 - len(channel["messages"])
    assert channel["note"] == f'Call read_channel with before="{channel["messages"][0]["id"]}" for earlier messages.'

    thread = json.loads(run("read_chat_thread", {"id": "Chat/busy/05"}))
    count = len(thread["messages"])
    assert thread["messages"][0]["id"] == "Chat/busy/00" and 0 < count < 30
    assert thread["note"] == f"{30 - count} later messages are not shown; call read_chat_thread with offset={count}."
    rest = json.loads(run("read_chat_thread", {"id": "Chat/busy/05", "offset": count}))
    assert rest["messages"][0]["id"] == f"Chat/busy/{count:02d}"


def test_one_huge_message_is_clipped_not_dropped(team, data_room, ws):
    authoring_services.document_create(world=data_room, user=team.author, path="Chat/finance/huge", kind=DocumentKind.CHAT,
                                       content="z" * 50_000, metadata={"channel": "finance", "from": "b@example.com",
                                                                       "date": "2026-03-05T00:00:00+00:00"})
    run = Runner(Workspace(data_room, ws.overlay))
    message = json.loads(run("read_channel", {"channel": "finance", "limit": 1}))["messages"][0]
    assert message["id"] == "Chat/finance/huge" and message["text"].endswith("… [46,000 more characters]")


def test_every_result_is_capped(run):
    text = run("read_file", {"path": "Deal/Notes.md"})
    assert len(text) < MAX_RESULT_CHARS
