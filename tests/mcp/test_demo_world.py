"""What the issue asks to be shown: an MCP client session on the demo world (the one
`make run` loads) lists its files, reads a docx and an xlsx formula cell, searches mail
and reads a thread, reads a chat channel, and writes a file into an overlay, whose diff
the replica UI then shows."""

import json
from io import StringIO

from django.core.management import call_command

from accounts.models import User
from authoring.models import Document, World
from demo.content import demo_content_load
from tests.mcp.conftest import in_session, text_of, token_for
from workspace.selectors import overlay_diff
from workspace.services import overlay_create

WORLD_TITLE = demo_content_load().world_title

MSA_EMAIL = "Mail/2026-02-26 RE Lighthouse — Northwind MSA"
ANSWER = "# Change-of-control risks\n\n1. Northwind MSA, clause 14.2.\n2. Harbour Bank facility, clause 22.4.\n"


def test_mcp_session_on_the_demo_world(transactional_db, settings, tmp_path, http):
    settings.VAR_DIR = tmp_path  # where seed_demo keeps the demo logins
    call_command("seed_demo", stdout=StringIO())
    world = World.objects.get(title=WORLD_TITLE)
    author = User.objects.get(username="demo-author")
    overlay = overlay_create(world=world, user=author, label="MCP demo", purpose="sandbox")
    world_rows = list(Document.objects.filter(world=world).values_list("path", "content", "updated_at").order_by("id"))

    async def read(client):
        return {
            "files": await client.call_tool("list_files", {"recursive": True}),
            "docx": await client.call_tool("read_file", {"path": "Deal/Letter of intent.docx"}),
            "xlsx": await client.call_tool("read_file", {"path": "Finance/Cap table.xlsx"}),
            "search": await client.call_tool("search_emails", {"text": "Northwind"}),
            "thread": await client.call_tool("read_thread", {"id": MSA_EMAIL}),
            "channel": await client.call_tool("read_channel", {"channel": "project-lighthouse"}),
        }

    async def write(client):
        return await client.call_tool("write_file", {"path": "Notes/Change of control risks.md", "content": ANSWER})

    results = in_session(http.transport(http.url("worlds", world.pk), token_for(author)), read)
    written = in_session(http.transport(http.url("overlays", overlay.pk), token_for(author)), write)

    texts = {name: text_of(result) for name, result in results.items()}
    assert not any(result.is_error for result in results.values()), texts
    listed = [f["path"] for f in json.loads(texts["files"])["files"]]
    assert {"Deal/Letter of intent.docx", "Deal/SPA draft v1.docx", "Finance/Cap table.xlsx"} <= set(listed)
    assert "2. Price. US$48,000,000 on a cash-free, debt-free basis" in texts["docx"]
    total = next(line for line in texts["xlsx"].splitlines() if line.startswith("C8 = "))
    assert total.startswith("C8 = 10000000") and "(formula =SUM(C2:C7))" in total
    assert [e["id"] for e in json.loads(texts["search"])["emails"]] == [MSA_EMAIL]
    assert "clause 14.2 of our MSA with Northwind Logistics" in texts["thread"]
    assert "Reading office lease (clause 8.3)" in texts["channel"]

    assert not written.is_error, text_of(written)
    [change] = overlay_diff(overlay=overlay)
    assert (change.path, change.action, change.after) == ("Notes/Change of control risks.md", "added", ANSWER)
    assert list(Document.objects.filter(world=world).values_list("path", "content", "updated_at").order_by("id")) == world_rows
