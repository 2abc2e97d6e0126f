"""The MCP server over one world (read-only) or one overlay, built from the tool layer:
one MCP tool per ToolSpec, its JSON schema as the tool's inputSchema, its result as
text content (an error result as isError=True, which the model reads and recovers from).

The tool layer is synchronous Django code and the SDK is async, so every call crosses
with sync_to_async(thread_sensitive=True): the ORM never runs on the event loop, and
the thread it does run on is the one Django manages connections for (the request's
thread over HTTP; one dedicated thread for a stdio server).
"""

from collections.abc import Callable

import anyio
import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import close_old_connections
from mcp.server import Server
from mcp.server.stdio import stdio_server

from authoring.models import World
from workspace.models import Overlay, OverlayPurpose
from workspace.tools import ToolResult, ToolSpec, Workspace, execute, specs

SERVER_NAME = "taskwright"
WRITES_REFUSED = (
    "This MCP connection is read-only: your role in this project cannot edit content, so the overlay can be read "
    "but nothing can be written, sent or posted into it."
)
TRIAL_READ_ONLY = (
    "This overlay is a trial run's workspace, kept as the agent left it: it can be read, but nothing can be written, sent "
    "or posted into it. Open a sandbox on the world to try changes."
)


def tool_definition(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.parameters,
        # Hints only; what a tool may do is enforced by the tool layer, never by these.
        annotations=types.ToolAnnotations(read_only_hint=not spec.writes, open_world_hint=False),
    )


def _instructions(world: World, overlay: Overlay | None, writable: bool) -> str:
    # Ids only: a title is user text, and clients often put these instructions in the model's prompt.
    where = f"Taskwright world {world.pk}"
    if overlay is None:
        return f"Drive, Mail, Chat and Calendar of {where}, read-only."
    access = ("reads and writes; writes land in a scratch overlay and never change the authored world" if writable else
              "read-only: a trial run's workspace, kept as the agent left it" if overlay.purpose != OverlayPurpose.SANDBOX else "read-only")
    return f"Drive, Mail, Chat and Calendar of {where} through overlay {overlay.pk} ({access})."


def build_server(*, world: World, overlay: Overlay | None = None, allow_writes: bool = True,
                 on_call: Callable[[], None] | None = None) -> Server:
    """An MCP server over `world` merged with `overlay`.

    Write tools are offered only over an overlay and only when `allow_writes` (a
    reviewer's token reads an overlay without them). `on_call`, when given, runs in the
    worker thread before and after each tool call (a long-lived stdio server uses it to
    drop a database connection that broke or outlived CONN_MAX_AGE, as Django does around
    each request)."""
    if overlay is not None and overlay.world_id != world.pk:
        raise ValueError("The overlay belongs to another world.")
    # A trial run's overlay is evidence (graded, compared, reviewed): only a sandbox takes writes.
    is_trial = overlay is not None and overlay.purpose != OverlayPurpose.SANDBOX
    writable = overlay is not None and allow_writes and not is_trial
    offered = specs(writable=writable)
    tools = [tool_definition(spec) for spec in offered]
    schemas = {spec.name: spec.parameters for spec in offered}
    write_tools = {spec.name for spec in specs(writable=True) if spec.writes}

    def run_tool(name: str, arguments: object) -> ToolResult:
        if overlay is not None and not writable and name in write_tools:
            return ToolResult(TRIAL_READ_ONLY if is_trial else WRITES_REFUSED, is_error=True)
        if on_call is not None:
            on_call()
        try:
            # A fresh Workspace per call: two queries, and nothing stale between calls.
            return execute(workspace=Workspace(world, overlay), name=name, arguments=arguments)
        finally:
            if on_call is not None:
                on_call()

    async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await sync_to_async(run_tool, thread_sensitive=True)(params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(text=result.text)], is_error=result.is_error)

    return Server(
        SERVER_NAME,
        title="Taskwright workspace",
        instructions=_instructions(world, overlay, writable),
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _serve_stdio(server: Server) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(*, world: World, overlay: Overlay | None) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes stdin."""
    server = build_server(world=world, overlay=overlay, on_call=close_old_connections)
    anyio.run(_serve_stdio, server)
