"""Tools over a world: Drive, Mail, Chat and Calendar as functions an agent calls.

    ws = Workspace(world, overlay)            # overlay=None: read-only
    tool_specs(writable=ws.writable)          # → llm.client.chat(tools=...)
    execute(workspace=ws, name="read_file", arguments={"path": "Deal/LOI.docx"}) → ToolResult(text, is_error)

Writes land only in the overlay; the authored world is never modified.
"""

from .base import ToolResult, ToolSpec
from .executor import execute, tool_specs, tool_writes
from .filetext import file_text
from .world import ChatMessage, Email, Event, Item, Workspace

__all__ = [
    "ChatMessage",
    "Email",
    "Event",
    "Item",
    "ToolResult",
    "ToolSpec",
    "Workspace",
    "execute",
    "file_text",
    "specs",
    "tool_specs",
    "tool_writes",
]


def specs(*, writable: bool) -> list[ToolSpec]:
    """The ToolSpec objects (name, description, parameters, writes)."""
    from .base import REGISTRY

    return [t.spec for t in REGISTRY.values() if writable or not t.spec.writes]
