"""Uploading a calendar and an email with attachments through the world editor's form
(htmx, multipart): the report says what was kept and what was not, the data room refreshes
in place, and the Calendar app shows the events."""

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import sign_in
from tests.uploads.test_rich_uploads import calendar_bytes, mail_with_attachments

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_upload_report_lists_what_was_kept_and_what_was_not(
    page: Page, live_server, settings, tmp_path, team, console_log: ConsoleLog, screenshot_dir
) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    world = factories.world(team.project, team.author, documents=0)
    sign_in(page, live_server.url, team.author.username)
    page.goto(f"{live_server.url}/worlds/{world.pk}/")
    page.evaluate("window.__sameDocument = true")
    page.get_by_label("Files to upload").set_input_files([
        {"name": "Deal calendar.ics", "mimeType": "text/calendar", "buffer": calendar_bytes()},
        {"name": "spa.eml", "mimeType": "message/rfc822", "buffer": mail_with_attachments()},
    ])
    page.get_by_role("button", name="Upload", exact=True).click()
    report = page.locator("#upload-report")
    expect(report.get_by_role("heading", level=2)).to_contain_text("Uploaded: 6 documents added")
    expect(report).to_contain_text("Uploads/Deal calendar/2026-01-12 Weekly deal call")
    expect(report).to_contain_text("Attached to Uploads/spa.eml")
    expect(report.locator(".upload-left").first).to_contain_text("it has no start date")
    expect(report).to_contain_text("The attachment signature.png of the email Uploads/spa.eml")
    expect(page.locator("#data-room")).to_contain_text("6 documents")  # refreshed in place
    assert page.evaluate("window.__sameDocument === true")
    report.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "upload-report.png", full_page=True)
    report.screenshot(path=screenshot_dir / "upload-report-panel.png")

    page.goto(f"{live_server.url}/worlds/{world.pk}/apps/calendar/")
    expect(page.get_by_text("Weekly deal call").first).to_be_visible()
    assert console_log.errors == []
