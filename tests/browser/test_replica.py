"""The replica apps in the browser: an expert reads the world as the agent sees it (Drive
with a docx and an xlsx, a mail thread, a chat channel, a calendar week), then opens a
sandbox, lets "the agent" write into it through the tool layer, and sees the changes
highlighted in Drive and as diffs on the Changes page."""

import re

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services as authoring_services
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import assert_same_document, mark_page, sign_in
from tests.workspace.conftest import CAP_TABLE, build_data_room
from workspace.models import Overlay
from workspace.tools import Workspace, execute

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NEW_CAP_TABLE = CAP_TABLE.replace("| 3 | Investors | 4000000 |", "| 3 | Investors | 6000000 |")
MEMO = "# Price memo\n\nThe price is **$12m**, with 10% in escrow.\n"


def agent_writes(overlay: Overlay) -> None:
    """What an agent does through its tools: the browser only watches."""
    ws = Workspace(overlay.world, overlay)
    for name, arguments in [
        ("write_file", {"path": "Work/Price memo.docx", "content": MEMO}),
        ("write_file", {"path": "Finance/Cap table.xlsx", "content": NEW_CAP_TABLE}),
        ("send_email", {"to": ["Priya Raman <p.raman@harlowfinch.com>"], "subject": "Price memo", "body": "Memo attached.",
                        "attachments": ["Work/Price memo.docx"]}),
        ("post_message", {"channel": "deal-team", "text": "The price memo is in Work/."}),
    ]:
        result = execute(workspace=ws, name=name, arguments=arguments)
        assert not result.is_error, result.text


def test_replica_apps_and_a_sandbox_with_its_changes(page: Page, live_server, console_log: ConsoleLog, screenshot_dir) -> None:
    base = live_server.url
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    world = authoring_services.world_create(project_id=project.pk, user=author, title="Project Lighthouse")
    build_data_room(world, author)

    sign_in(page, base, author.username)
    page.goto(f"{base}/worlds/{world.pk}/")

    # Drive: the docx as text, then the xlsx as a table with its computed values.
    page.locator("#replica-open").get_by_role("link", name="Drive").click()
    expect(page.get_by_role("heading", name="Project Lighthouse", level=1)).to_be_visible()
    mark_page(page)
    page.locator(".replica-tree").get_by_role("link", name="Deal").click()
    page.locator("#replica-files").get_by_role("link", name="Letter of intent.docx").click()
    viewer = page.locator("#replica-viewer")
    expect(viewer.get_by_role("heading", name="Letter of intent", exact=True)).to_be_visible()
    expect(viewer).to_contain_text("Exclusivity for six weeks")
    expect(viewer.get_by_role("link", name="Download .docx")).to_be_visible()
    page.locator(".replica-tree").get_by_role("link", name="Finance").click()
    page.locator("#replica-files").get_by_role("link", name="Cap table.xlsx").click()
    expect(viewer.get_by_role("heading", name="Cap table.xlsx")).to_be_visible()
    expect(viewer.locator("td", has_text="=B2/B4")).to_contain_text("60.0%")  # the formula and its computed value
    expect(viewer.locator("td", has_text="=SUM(B2:B3)")).to_contain_text("10,000,000")
    assert_same_document(page)
    assert "path=Finance" in page.url  # the address names the open file, so a reload shows it again
    with page.expect_download() as download:
        viewer.get_by_role("link", name="Download .xlsx").click()
    assert download.value.suggested_filename == "Cap table.xlsx"
    page.screenshot(path=screenshot_dir / "21-drive.png", full_page=True)

    # Mail: the newest conversation first, a thread read oldest first, a search.
    page.locator(".replica-tabs").get_by_role("link", name=re.compile("^Mail")).click()
    conversations = page.locator(".replica-conversation")
    expect(conversations).to_have_count(2)
    expect(conversations.first).to_contain_text("Reading lease consent")
    mark_page(page)
    page.get_by_label("Search mail").fill("lease")
    expect(conversations).to_have_count(1)
    conversations.get_by_role("link").click()
    reading = page.locator("#replica-reading")
    expect(reading.get_by_role("link", name="Deal/Notes.md")).to_be_visible()  # the attachment opens in Drive
    page.locator("#replica-mailbox").get_by_role("link", name="clear").click()  # a plain link: the search box empties too
    expect(page.get_by_label("Search mail")).to_have_value("")
    expect(conversations).to_have_count(2)
    mark_page(page)
    conversations.filter(has_text="RE: RE: Price").get_by_role("link").click()
    expect(reading.locator(".replica-email")).to_have_count(3)
    expect(reading.locator(".replica-email").first).to_contain_text("What is the price?")
    expect(reading.locator(".replica-email").last).to_contain_text("Agreed, 10% escrow.")
    assert_same_document(page)
    page.screenshot(path=screenshot_dir / "22-mail.png", full_page=True)

    # Chat: a channel's messages in order, a thread unfolded.
    page.locator(".replica-tabs").get_by_role("link", name=re.compile("^Chat")).click()
    mark_page(page)
    page.get_by_role("link", name=re.compile("#deal-team")).click()
    messages = page.locator(".replica-messages > .replica-message")
    expect(messages).to_have_count(2)
    expect(messages.first).to_contain_text("The Reading lease needs landlord consent.")
    page.get_by_text("1 reply").click()
    expect(page.get_by_text("Thanks, I will ask Kestrel.")).to_be_visible()
    assert_same_document(page)
    page.screenshot(path=screenshot_dir / "23-chat.png", full_page=True)

    # Calendar: the agenda by day, then the week of the first event and the week picker.
    page.locator(".replica-tabs").get_by_role("link", name=re.compile("^Calendar")).click()
    expect(page.get_by_role("heading", name="Wednesday 4 March 2026")).to_be_visible()
    mark_page(page)
    page.locator(".replica-segmented").get_by_role("link", name="Week").click()
    week = page.locator(".replica-week")
    expect(page.locator(".replica-week-label")).to_have_text("2 Mar – 8 Mar 2026")
    call = week.locator(".replica-event", has_text="Weekly diligence call")
    expect(call).to_contain_text("15:00–16:00")
    expect(call).to_contain_text("Video call")
    expect(call).to_contain_text("Priya Raman, Hannah Cole")
    page.get_by_role("link", name="Next week").click()
    expect(page.locator(".replica-week-label")).to_have_text("9 Mar – 15 Mar 2026")
    expect(week.locator(".replica-event", has_text="Signing")).to_contain_text("Harlow & Finch, London")
    page.get_by_role("link", name="Previous week").click()
    expect(page.locator(".replica-week-label")).to_have_text("2 Mar – 8 Mar 2026")
    expect(call).to_be_visible()
    assert_same_document(page)
    page.screenshot(path=screenshot_dir / "24-calendar.png", full_page=True)

    # A sandbox from the world page; the agent writes into it; its changes are highlighted.
    page.goto(f"{base}/worlds/{world.pk}/")
    sandboxes = page.locator("#replica-sandboxes")
    sandboxes.get_by_label("New sandbox").fill("Price memo trial")
    sandboxes.get_by_role("button", name="Create sandbox").click()
    row = sandboxes.locator("tr", has_text="Price memo trial")
    expect(row).to_contain_text("New")
    agent_writes(Overlay.objects.get(world=world, label="Price memo trial"))

    row.get_by_role("link", name="Drive").click()
    expect(page.locator("#replica-banner")).to_contain_text("Sandbox “Price memo trial”")
    expect(page.locator("#replica-banner")).to_contain_text("4 changes")
    page.locator(".replica-tree").get_by_role("link", name="Work").click()
    memo = page.locator("tr.replica-added", has_text="Price memo.docx")
    expect(memo.locator(".replica-badge")).to_have_text("Added")
    memo.get_by_role("link", name="Price memo.docx").click()
    expect(viewer).to_contain_text("Created in this sandbox")
    expect(viewer.get_by_role("heading", name="Price memo", exact=True)).to_be_visible()
    with page.expect_download() as download:
        viewer.get_by_role("link", name=re.compile("Download .docx")).click()
    assert download.value.suggested_filename == "Price memo.docx"
    page.locator(".replica-tree").get_by_role("link", name="Finance").click()
    expect(page.locator("tr.replica-modified", has_text="Cap table.xlsx")).to_be_visible()

    page.locator(".replica-tabs").get_by_role("link", name=re.compile("^Changes")).click()
    changes = page.locator("article.replica-change")
    expect(changes).to_have_count(4)
    cap_table = changes.filter(has_text="Finance/Cap table.xlsx")
    expect(cap_table.locator(".replica-diff-del")).to_contain_text(["| 3 | Investors | 4000000 |"])
    expect(cap_table.locator(".replica-diff-add")).to_contain_text(["| 3 | Investors | 6000000 |"])
    expect(changes.filter(has_text="Mail/Sent").locator(".replica-badge")).to_have_text("Sent")
    expect(page.locator(".replica-toolbar")).to_contain_text("1 file added · 1 file modified · 1 email sent · 1 chat message posted")
    page.screenshot(path=screenshot_dir / "25-overlay-changes.png", full_page=True)

    # The world itself shows none of it.
    page.get_by_role("link", name="Open the world without changes").click()
    expect(page.locator("#replica-banner")).to_have_count(0)
    expect(page.locator(".replica-tree").get_by_role("link", name="Work")).to_have_count(0)

    # Deleting the sandbox (confirmed on a page of its own) leaves the world page's list empty again.
    page.goto(f"{base}/worlds/{world.pk}/")
    page.locator("#replica-sandboxes").get_by_role("link", name=re.compile("Delete sandbox")).click()
    expect(page.locator("#sandbox-delete-confirm")).to_contain_text("Its 4 changes will be lost")
    page.get_by_role("button", name="Delete sandbox").click()
    expect(page.locator("#replica-sandboxes")).to_contain_text("No sandbox yet.")
    assert not Overlay.objects.filter(world=world).exists()
    assert console_log.errors == []
