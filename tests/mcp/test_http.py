"""MCP over streamable HTTP under the web app (config.asgi in uvicorn), driven by the
official MCP client: tokens, scoping by project, roles, writes into an overlay."""

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from authoring.models import Document
from tests.mcp.calls import assert_reads_show_the_data_room, call_all, expected_texts
from tests.mcp.conftest import in_session, text_of, token_for
from workspace.models import OverlayEntry
from workspace.tools import tool_specs

READ_TOOLS = [s["name"] for s in tool_specs(writable=False)]
ALL_TOOLS = [s["name"] for s in tool_specs(writable=True)]


async def tool_names(client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # the 2026 per-request envelope and the 2025 initialize handshake
def test_token_holder_lists_and_calls_every_read_tool_on_a_world(room, http, mode):
    expected = expected_texts(room.world)

    async def work(client):
        return await client.list_tools(), await call_all(client)

    listed, results = in_session(http.transport(http.url("worlds", room.world.pk), token_for(room.team.reviewer)), work, mode=mode)

    assert [(t.name, t.description, t.input_schema) for t in listed.tools] == [
        (s["name"], s["description"], s["parameters"]) for s in tool_specs(writable=False)
    ], http.log()
    texts = [text_of(r) for r in results]
    assert texts == expected
    assert_reads_show_the_data_room(texts)


def test_both_token_schemes_are_accepted(room, http):
    url = http.url("worlds", room.world.pk)
    for scheme in ("Bearer", "Token"):
        assert in_session(http.transport(url, token_for(room.team.author), scheme=scheme), tool_names) == READ_TOOLS


def refused_statuses(transport, statuses: list) -> list[int]:
    """Open a session that the server must refuse; the HTTP statuses it answered with."""
    # The client's task group may wrap the MCPError in an exception group.
    with pytest.RaisesGroup(MCPError, allow_unwrapped=True, flatten_subgroups=True):
        in_session(transport, tool_names)
    return statuses


def test_no_or_unknown_token_is_401(room, http):
    url = http.url("worlds", room.world.pk)
    for token in (None, "0" * 40):
        statuses = []
        assert set(refused_statuses(http.transport(url, token, statuses=statuses), statuses)) == {401}
    response = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={"Authorization": "Basic eDp5"})
    assert response.status_code == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")
    assert "Authorization: Bearer <token>" in response.json()["error"]["message"]


def test_a_world_or_overlay_of_another_project_is_404(room, http):
    outsider = token_for(room.other_team.admin)
    insider = token_for(room.team.admin)
    for url, token in [
        (http.url("worlds", room.world.pk), outsider),
        (http.url("overlays", room.overlay.pk), outsider),
        (http.url("worlds", room.other_world.pk), insider),
        (http.url("overlays", room.other_overlay.pk), insider),
        (http.url("worlds", room.other_world.pk + 1000), insider),  # no such world: the same answer
        (http.url("worlds", 2**70), insider),
    ]:
        statuses = []
        assert set(refused_statuses(http.transport(url, token, statuses=statuses), statuses)) == {404}, url
    assert not OverlayEntry.objects.exists()


def test_reviewer_reads_an_overlay_but_cannot_write_to_it(room, http):
    url = http.url("overlays", room.overlay.pk)
    author_wrote = in_session(http.transport(url, token_for(room.team.author)),
                              lambda c: c.call_tool("write_file", {"path": "Deal/Draft.md", "content": "Author's draft"}))
    assert not author_wrote.is_error, text_of(author_wrote)

    async def work(client):
        return (await tool_names(client), await client.call_tool("read_file", {"path": "Deal/Draft.md"}),
                await client.call_tool("write_file", {"path": "Deal/Draft.md", "content": "Reviewer's edit"}),
                await client.call_tool("send_email", {"to": ["a@example.com"], "subject": "x", "body": "y"}))

    names, read, write, send = in_session(http.transport(url, token_for(room.team.reviewer)), work)

    assert names == READ_TOOLS
    assert text_of(read) == "File: Deal/Draft.md (md)\n\nAuthor's draft"  # the overlay's state, not just the world
    for refused in (write, send):
        assert refused.is_error and "read-only" in text_of(refused)
    assert list(OverlayEntry.objects.values_list("path", "content")) == [("Deal/Draft.md", "Author's draft")]


@pytest.mark.parametrize("role", ["author", "admin"])
def test_author_or_admin_writes_into_the_overlay_and_the_world_is_unchanged(room, http, role):
    before = list(Document.objects.filter(world=room.world).order_by("id").values_list("path", "content", "updated_at"))
    user = getattr(room.team, role)

    async def work(client):
        return (await tool_names(client),
                await client.call_tool("write_file", {"path": "Deal/Letter of intent.docx", "content": "# LOI v2\n\nPrice $13m."}),
                await client.call_tool("read_file", {"path": "Deal/Letter of intent.docx"}))

    names, written, read = in_session(http.transport(http.url("overlays", room.overlay.pk), token_for(user)), work)

    assert names == ALL_TOOLS
    assert not written.is_error, text_of(written)
    assert "# LOI v2" in text_of(read)
    entry = OverlayEntry.objects.get()
    assert (entry.overlay_id, entry.path, entry.format, entry.content) == (room.overlay.pk, "Deal/Letter of intent.docx", "docx",
                                                                           "# LOI v2\n\nPrice $13m.")
    assert list(Document.objects.filter(world=room.world).order_by("id").values_list("path", "content", "updated_at")) == before
    # The world's own endpoint stays read-only, whoever calls it.
    refused = in_session(http.transport(http.url("worlds", room.world.pk), token_for(user)),
                         lambda c: c.call_tool("write_file", {"path": "Deal/X.md", "content": "x"}))
    assert refused.is_error and "read-only" in text_of(refused)
    assert OverlayEntry.objects.count() == 1


def test_a_trial_runs_overlay_shows_the_task_files_and_takes_no_writes(room, http):
    """A trial run's overlay is evidence: over MCP it reads as the agent read it (the task's
    input files over the world) and refuses writes, even an author's (they used to land in
    the graded run's changes)."""
    async def work(client):
        return (await tool_names(client), await client.call_tool("list_files", {"recursive": True}),
                await client.call_tool("read_file", {"path": room.task_file}),
                await client.call_tool("post_message", {"channel": "deal-team", "text": "Planted"}))

    names, listed, read, posted = in_session(http.transport(http.url("overlays", room.trial_overlay.pk), token_for(room.team.author)),
                                             work)
    assert names == READ_TOOLS
    assert room.task_file in text_of(listed)
    assert "Landlord consent" in text_of(read)
    assert posted.is_error and "trial run's workspace, kept as the agent left it" in text_of(posted)
    assert not OverlayEntry.objects.filter(overlay=room.trial_overlay).exists()
    # The world itself, and a sandbox on it, do not hold the task's file.
    for url in (http.url("worlds", room.world.pk), http.url("overlays", room.overlay.pk)):
        assert room.task_file not in text_of(in_session(http.transport(url, token_for(room.team.author)),
                                                        lambda c: c.call_tool("list_files", {"recursive": True})))


def test_only_post_is_served_and_a_foreign_origin_is_refused(room, http):
    url = http.url("worlds", room.world.pk)
    auth = {"Authorization": f"Bearer {token_for(room.team.author)}"}
    assert httpx2.get(url, headers=auth).status_code == 405
    assert httpx2.delete(url, headers=auth).status_code == 405
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {**auth, "Accept": "application/json, text/event-stream", "Origin": "http://evil.example"}
    assert httpx2.post(url, json=message, headers=headers).status_code == 403
