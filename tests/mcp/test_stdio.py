"""`manage.py mcp_world` over stdio, driven by the official MCP client."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from authoring.models import Document
from tests.mcp.calls import READ_CALLS, assert_reads_show_the_data_room, call_all, expected_texts
from tests.mcp.conftest import in_session, text_of
from workspace.models import OverlayAction, OverlayEntry
from workspace.tools import specs, tool_specs


def world_rows(world) -> list[tuple]:
    return list(
        Document.objects.filter(world=world).order_by("id").values_list("path", "kind", "format", "content", "metadata", "updated_at")
    )


def test_read_only_world_lists_read_tools_and_answers_every_read_like_the_tool_layer(room, stdio):
    expected = expected_texts(room.world)
    before = world_rows(room.world)

    async def work(client):
        listed = await client.list_tools()
        results = await call_all(client)
        refused = await client.call_tool("write_file", {"path": "Deal/New.md", "content": "# New"})
        return listed, results, refused

    listed, results, refused = in_session(stdio.transport(room.world.pk), work)

    assert [(t.name, t.description, t.input_schema) for t in listed.tools] == [
        (s["name"], s["description"], s["parameters"]) for s in tool_specs(writable=False)
    ], stdio.log()
    assert not {t.name for t in listed.tools} & {s.name for s in specs(writable=True) if s.writes}
    assert all(t.annotations.read_only_hint and t.annotations.open_world_hint is False for t in listed.tools)
    assert {name for name, _ in READ_CALLS} == {s.name for s in specs(writable=False)}  # every read tool is called
    assert [r.is_error for r in results] == [False] * len(READ_CALLS)
    texts = [text_of(r) for r in results]
    assert texts == expected
    assert_reads_show_the_data_room(texts)

    assert refused.is_error and "read-only" in text_of(refused)
    assert world_rows(room.world) == before
    assert not OverlayEntry.objects.exists()


def test_overlay_session_writes_into_the_overlay_and_never_the_world(room, stdio):
    before = world_rows(room.world)

    async def work(client):
        listed = await client.list_tools()
        written = await client.call_tool("write_file", {"path": "Deal/Summary.md", "content": "# Summary\n\nPrice $12m."})
        read_back = await client.call_tool("read_file", {"path": "Deal/Summary.md"})
        deleted = await client.call_tool("delete_file", {"path": "Deal/Notes.md"})
        bad = await client.call_tool("write_file", {"path": "../../etc/passwd", "content": "x"})
        return listed, written, read_back, deleted, bad

    listed, written, read_back, deleted, bad = in_session(stdio.transport(room.world.pk, "--overlay", room.overlay.pk), work)

    assert [t.name for t in listed.tools] == [s["name"] for s in tool_specs(writable=True)], stdio.log()
    assert not written.is_error and text_of(written).startswith("Created Deal/Summary.md"), text_of(written)
    assert text_of(read_back) == "File: Deal/Summary.md (md)\n\n# Summary\n\nPrice $12m."
    assert not deleted.is_error, text_of(deleted)
    assert bad.is_error
    entries = {e.path: e for e in OverlayEntry.objects.filter(overlay=room.overlay)}
    assert set(entries) == {"Deal/Summary.md", "Deal/Notes.md"}
    assert entries["Deal/Summary.md"].content == "# Summary\n\nPrice $12m." and entries["Deal/Notes.md"].action == OverlayAction.DELETE
    assert world_rows(room.world) == before
    assert not OverlayEntry.objects.exclude(overlay=room.overlay).exists()


def test_command_refuses_a_missing_world_and_another_worlds_overlay(room):
    with pytest.raises(CommandError, match=f"There is no world {room.other_world.pk + 1000}."):
        call_command("mcp_world", str(room.other_world.pk + 1000))
    with pytest.raises(CommandError, match=f"World {room.world.pk} has no overlay {room.other_overlay.pk}."):
        call_command("mcp_world", str(room.world.pk), "--overlay", str(room.other_overlay.pk))
