"""manage.py mcp_world <world id> [--overlay <overlay id>]: an MCP server over stdio.

Without --overlay the world is served read-only; with a sandbox overlay, write tools are
offered and everything they write lands in that overlay (which must belong to the world);
a trial run's overlay is served read-only, as the agent left it, with the task's input files. stdout
carries only the MCP protocol: messages for people go to stderr.

    {"mcpServers": {"taskwright": {"command": ".venv/bin/python", "args": ["manage.py", "mcp_world", "3"]}}}
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from authoring.models import World
from workspace.mcp.server import run_stdio
from workspace.models import Overlay, OverlayPurpose


class Command(BaseCommand):
    help = "Serve a world (read-only) or one of its overlays (writable) as an MCP server over stdio."

    def add_arguments(self, parser) -> None:
        parser.add_argument("world_id", type=int)
        parser.add_argument("--overlay", type=int, dest="overlay_id", help="serve this overlay of the world (a sandbox with write tools)")

    def handle(self, *args, world_id: int, overlay_id: int | None, **options) -> None:
        world = World.objects.filter(pk=world_id).first()
        if world is None:
            raise CommandError(f"There is no world {world_id}.")
        overlay = None
        if overlay_id is not None:
            overlay = Overlay.objects.filter(pk=overlay_id).first()
            if overlay is None or overlay.world_id != world.pk:
                raise CommandError(f"World {world.pk} has no overlay {overlay_id}.")
        if overlay is None:
            mode = "read-only"
        elif overlay.purpose == OverlayPurpose.SANDBOX:
            mode = f"sandbox overlay {overlay.pk}, writable"
        else:
            mode = f"overlay {overlay.pk} of a trial run, read-only (kept as the agent left it)"
        self.stderr.write(f"Serving world {world.pk} ({world.title}), {mode}, as MCP over stdio.")
        # Tool calls run on another thread (each with its own connection); this one would
        # only sit idle for the whole session.
        connections.close_all()
        run_stdio(world=world, overlay=overlay)
