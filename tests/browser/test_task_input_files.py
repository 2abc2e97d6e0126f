"""The task editor's Input files section in a browser: upload into a folder (htmx,
multipart) and the list appears in place; Remove asks first, then the empty state is back."""

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_upload_and_remove_an_input_file_in_place(page: Page, live_server, settings, tmp_path, team, env_task,
                                                  console_log: ConsoleLog, screenshot_dir) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    sign_in(page, live_server.url, team.author.username)
    page.goto(f"{live_server.url}/tasks/{env_task.pk}/")
    page.evaluate("window.__sameDocument = true")
    section = page.locator("#input-files")
    expect(section.locator("#input-files-empty")).to_contain_text("Files the agent receives with this task")
    section.get_by_label("Files", exact=True).set_input_files(
        [{"name": "figures.csv", "mimeType": "text/csv", "buffer": b"quarter,revenue\nQ1,120\n"}]
    )
    section.get_by_label("Folder (optional)").fill("Inputs")
    section.get_by_role("button", name="Upload input files").click()
    expect(page.locator("#input-files")).to_contain_text("Uploaded 1 input file: Inputs/figures.csv.")
    expect(page.locator("#input-files-list")).to_contain_text("Inputs/figures.csv")
    section.screenshot(path=screenshot_dir / "180-task-input-files.png")

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#input-files").get_by_role("link", name="Remove Inputs/figures.csv").click()
    expect(page.locator("#input-files")).to_contain_text("Removed the input file Inputs/figures.csv.")
    expect(page.locator("#input-files-empty")).to_be_visible()
    assert page.evaluate("window.__sameDocument === true") and not env_task.input_files.exists()
    assert console_log.errors == []
