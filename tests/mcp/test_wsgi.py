"""The MCP endpoint is a Django view, so it serves under WSGI too: `make run` starts
`runserver`, and pytest-django's live_server is the same kind of server."""

from tests.mcp.conftest import http_transport, in_session, text_of, token_for
from workspace.models import OverlayEntry
from workspace.tools import tool_specs


def test_mcp_over_http_under_a_wsgi_server(room, live_server):
    url = f"{live_server.url}/mcp/overlays/{room.overlay.pk}/"

    async def work(client):
        return ([t.name for t in (await client.list_tools()).tools],
                await client.call_tool("read_file", {"path": "Finance/Cap table.xlsx"}),
                await client.call_tool("write_file", {"path": "Notes/From WSGI.md", "content": "Written over WSGI."}))

    names, xlsx, written = in_session(http_transport(url, token_for(room.team.author)), work)

    assert names == [s["name"] for s in tool_specs(writable=True)]
    assert "B4 = 10000000  (formula =SUM(B2:B3))" in text_of(xlsx)
    assert not written.is_error, text_of(written)
    assert OverlayEntry.objects.get().content == "Written over WSGI."
