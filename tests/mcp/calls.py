"""Calls to every read tool over the data room of tests/workspace, every file format
included, and what the MCP answers must show beyond equalling the tool layer's."""

from tests.workspace.conftest import CALL, CHAT_ROOT, LEASE, LOI, ROOT
from workspace.tools import Workspace, execute

READ_CALLS = [
    ("list_files", {}),
    ("list_files", {"folder": "Finance"}),
    ("search_files", {"query": "escrow"}),
    ("read_file", {"path": "Deal/Letter of intent.docx"}),
    ("read_file", {"path": "Finance/Cap table.xlsx"}),
    ("read_file", {"path": "Board/Q1 update.pptx"}),
    ("read_file", {"path": "Legal/Opinions/Opinion.pdf"}),
    ("read_file", {"path": "Finance/Payments.csv"}),
    ("read_file", {"path": "Deal/Notes.md"}),
    ("list_emails", {}),
    ("search_emails", {"text": "escrow"}),
    ("read_email", {"id": LEASE}),
    ("read_thread", {"id": ROOT}),
    ("list_channels", {}),
    ("read_channel", {"channel": "#deal-team"}),
    ("read_chat_thread", {"id": CHAT_ROOT}),
    ("search_chat", {"query": "lease"}),
    ("list_events", {"start": "2026-03-01", "end": "2026-03-31"}),
    ("search_events", {"query": "signing"}),
    ("read_event", {"id": CALL}),
]


def expected_texts(world, overlay=None) -> list[str]:
    """What the tool layer itself answers to READ_CALLS (read in this process, before
    the MCP session, since the session's event loop must not touch the ORM)."""
    workspace = Workspace(world, overlay)
    results = [execute(workspace=workspace, name=name, arguments=arguments) for name, arguments in READ_CALLS]
    assert not any(r.is_error for r in results), [r.text for r in results if r.is_error]
    return [r.text for r in results]


async def call_all(client) -> list:
    return [await client.call_tool(name, arguments) for name, arguments in READ_CALLS]


def assert_reads_show_the_data_room(texts: list[str]) -> None:
    """What a person checking the MCP session looks for: a docx's text, an xlsx cell's
    value and formula, mail search and a whole thread, a chat channel."""
    by_call = {(name, str(arguments)): text for (name, arguments), text in zip(READ_CALLS, texts, strict=True)}
    assert by_call[("read_file", str({"path": "Deal/Letter of intent.docx"}))] == f"File: Deal/Letter of intent.docx (docx)\n\n{LOI}"
    xlsx = by_call[("read_file", str({"path": "Finance/Cap table.xlsx"}))]
    assert "B4 = 10000000  (formula =SUM(B2:B3))" in xlsx and "C2 = 0.6, shown as 60.0%  (formula =B2/B4)" in xlsx
    found = by_call[("search_emails", str({"text": "escrow"}))]
    assert "RE: RE: Price" in found and "RE: Price" in found
    thread = by_call[("read_thread", str({"id": ROOT}))]
    assert "What is the price?" in thread and "The price is $12m with escrow." in thread and "Agreed, 10% escrow." in thread
    channel = by_call[("read_channel", str({"channel": "#deal-team"}))]
    assert "The Reading lease needs landlord consent." in channel and "SPA mark-up is due Friday." in channel
