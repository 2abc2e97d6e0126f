"""Issue 17 in the browser: a sandbox's apps answer the author. In one sandbox an author
sends a mail, posts in chat, adds an event and uploads a file (each through its form, by
htmx, the page never reloaded and the header's count following), sees all four on the
Changes page, discards one, and deletes the sandbox through its confirmation page."""

import re

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services as authoring_services
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import assert_same_document, mark_page, sign_in
from tests.workspace.conftest import build_data_room
from workspace.models import Overlay, OverlayEntry
from workspace.services import overlay_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_author_writes_in_a_sandbox_discards_a_change_and_deletes_it(page: Page, live_server, console_log: ConsoleLog,
                                                                        screenshot_dir) -> None:
    base = live_server.url
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    world = authoring_services.world_create(project_id=project.pk, user=author, title="Project Lighthouse")
    build_data_room(world, author)
    sandbox = overlay_create(world=world, user=author, label="Escrow trial")

    sign_in(page, base, author.username)
    page.goto(f"{base}/overlays/{sandbox.pk}/apps/mail/")
    banner = page.locator("#replica-banner")
    expect(banner).to_contain_text("Nothing has been changed in it yet.")
    tabs = page.locator(".replica-tabs")
    mark_page(page)

    # Mail: compose and send.
    page.get_by_role("link", name="Compose").click()
    page.get_by_label("To").fill("Hannah Cole <hannah.cole@beta.example>")
    page.get_by_label("Subject").fill("Escrow at 15%")
    page.get_by_label("Message").fill("We propose 15% in escrow.")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(".replica-conversation").first).to_contain_text("Escrow at 15%")
    expect(banner).to_contain_text("1 change")  # the header followed the write
    assert_same_document(page)

    # Chat: post in the channel on screen.
    tabs.get_by_role("link", name=re.compile("^Chat")).click()
    mark_page(page)
    page.locator("#replica-post-form").get_by_label("Message").fill("The escrow memo is on its way.")
    page.get_by_role("button", name="Post in #deal-team").click()
    expect(page.locator(".replica-messages > .replica-message").last).to_contain_text("The escrow memo is on its way.")
    expect(banner).to_contain_text("2 changes")
    assert_same_document(page)

    # Calendar: add an event in UTC+01:00.
    tabs.get_by_role("link", name=re.compile("^Calendar")).click()
    mark_page(page)
    page.get_by_role("link", name="New event").click()
    page.get_by_label("Title").fill("Escrow call")
    page.get_by_label("Starts on").fill("2026-03-05")
    page.locator("#id_start_time").fill("10:00")
    page.locator("#id_end_time").fill("10:30")
    page.get_by_label("Time zone").select_option(label="UTC+01:00")
    page.get_by_role("button", name="Add event").click()
    call = page.locator(".replica-agenda-event", has_text="Escrow call")
    expect(call).to_contain_text("10:00–10:30")
    expect(call).to_contain_text("UTC+01:00")
    expect(banner).to_contain_text("3 changes")
    assert_same_document(page)

    # Drive: upload a Markdown file into a folder of its own.
    tabs.get_by_role("link", name=re.compile("^Drive")).click()
    mark_page(page)
    page.get_by_text("Upload a file").click()
    page.get_by_label("File", exact=True).set_input_files(
        {"name": "Escrow memo.md", "mimeType": "text/markdown", "buffer": b"# Escrow memo\n\nWe hold back 15% for a year.\n"})
    page.get_by_label("Folder", exact=True).fill("Work")
    page.get_by_role("button", name="Upload into this sandbox").click()
    expect(page.locator("#replica-viewer")).to_contain_text("We hold back 15% for a year.")
    expect(banner).to_contain_text("4 changes")
    assert_same_document(page)

    # Changes: all four; discard the chat message.
    tabs.get_by_role("link", name=re.compile("^Changes")).click()
    changes = page.locator("article.replica-change")
    expect(changes).to_have_count(4)
    expect(page.locator(".replica-toolbar")).to_contain_text("1 file added · 1 email sent · 1 chat message posted · 1 event created")
    page.screenshot(path=screenshot_dir / "sandbox-01-changes.png", full_page=True)
    mark_page(page)
    changes.filter(has_text="Message in #deal-team").get_by_role("button", name=re.compile("^Discard")).click()
    expect(changes).to_have_count(3)
    expect(page.locator(".replica-tabs .replica-tab-changes")).to_contain_text("3")
    assert_same_document(page)
    assert OverlayEntry.objects.filter(overlay=sandbox).count() == 3

    # Deleting the sandbox asks first, on a page of its own.
    page.get_by_role("link", name="Delete sandbox…").click()
    confirm = page.locator("#sandbox-delete-confirm")
    expect(confirm).to_contain_text(
        "Delete sandbox “Escrow trial”? Its 3 changes will be lost; the world “Project Lighthouse” is not affected.")
    page.screenshot(path=screenshot_dir / "sandbox-02-delete-confirm.png", full_page=True)
    confirm.get_by_role("button", name="Delete sandbox").click()
    expect(page.get_by_text("Sandbox “Escrow trial” was deleted.")).to_be_visible()
    assert not Overlay.objects.filter(pk=sandbox.pk).exists()
    assert console_log.errors == []
