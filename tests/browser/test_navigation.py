"""Finding one's way in the browser: the task page's tabs (click, arrow keys, the address
remembers the tab, each panel loads when first shown), the user menu, Packs for admins, and
the project page a page at a time at 10,000 tasks."""

import re
import time

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring.models import EnvTask, EnvTaskStatus
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_task_page_tabs_and_user_menu(page: Page, live_server, console_log: ConsoleLog, screenshot_dir) -> None:
    base = live_server.url
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    world = factories.world(project, author, title="Acme acquires Beta", documents=2, drafted=True)
    env_task = factories.env_task(world, author, title="State the purchase price")
    shots = screenshot_dir / "navigation"
    shots.mkdir(exist_ok=True)

    sign_in(page, base, author.username)
    page.goto(f"{base}/tasks/{env_task.pk}/")
    tabs = page.get_by_role("tablist", name="Parts of this task")
    expect(tabs.get_by_role("tab")).to_have_count(5)
    prompt_tab = tabs.get_by_role("tab", name="Prompt & rubric")
    expect(prompt_tab).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("tabpanel", name="Prompt & rubric")).to_be_visible()
    expect(page.locator("#rubric")).to_be_visible()
    expect(page.locator("#task-trials")).to_be_hidden()
    page.screenshot(path=shots / "01-task-prompt-tab.png", full_page=True)
    page.evaluate("window.__sameDocument = true")

    # A click switches in place; the panel loads the first time it is shown; the address keeps the tab.
    tabs.get_by_role("tab", name="Trials").click()
    expect(tabs.get_by_role("tab", name="Trials")).to_have_attribute("aria-selected", "true")
    expect(prompt_tab).to_have_attribute("aria-selected", "false")
    expect(page.locator("#rubric")).to_be_hidden()
    expect(page.locator("#task-trials").get_by_role("heading", name="Trial runs")).to_be_visible()
    assert page.url.endswith("?tab=trials")
    page.screenshot(path=shots / "02-task-trials-tab.png", full_page=True)

    # Arrow keys move between tabs (and select them), Home / End jump to the ends.
    page.keyboard.press("ArrowRight")
    verifier_tab = tabs.get_by_role("tab", name="Verifier quality")
    expect(verifier_tab).to_be_focused()
    expect(verifier_tab).to_have_attribute("aria-selected", "true")
    expect(page.locator("#task-verifier")).not_to_contain_text("Loading the verifier")
    page.keyboard.press("ArrowRight")
    expect(tabs.get_by_role("tab", name="Review")).to_be_focused()
    expect(page.locator("#review-status")).to_be_visible()
    page.screenshot(path=shots / "03-task-review-tab.png", full_page=True)
    page.keyboard.press("End")
    history_tab = tabs.get_by_role("tab", name="History")
    expect(history_tab).to_be_focused()
    expect(page.locator("#task-audit")).to_be_visible()
    page.screenshot(path=shots / "04-task-history-tab.png", full_page=True)
    page.keyboard.press("ArrowRight")  # wraps around
    expect(prompt_tab).to_be_focused()
    expect(page.locator("#rubric")).to_be_visible()
    assert page.evaluate("window.__sameDocument === true"), "switching tabs reloaded the page"

    # The address opens the tab it names; an old link to #task-trials opens the Trials tab.
    page.goto(f"{base}/tasks/{env_task.pk}/?tab=history")
    expect(history_tab).to_have_attribute("aria-selected", "true")
    expect(page.locator("#task-audit")).to_be_visible()
    page.goto(f"{base}/tasks/{env_task.pk}/#task-trials")
    expect(tabs.get_by_role("tab", name="Trials")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#task-trials").get_by_role("heading", name="Trial runs")).to_be_visible()

    # The user menu: username → API, Notifications, Sign out; the bell stays in the bar.
    expect(page.locator("#notification-bell")).to_be_visible()
    expect(page.get_by_role("link", name="API", exact=True)).to_be_hidden()
    page.locator("#user-menu summary").click()
    menu = page.locator("#user-menu")
    expect(menu.get_by_role("link", name="API", exact=True)).to_be_visible()
    expect(menu.get_by_role("link", name="Notifications", exact=True)).to_be_visible()
    page.screenshot(path=shots / "05-user-menu.png")
    page.keyboard.press("Escape")
    expect(menu.get_by_role("link", name="API", exact=True)).to_be_hidden()
    expect(page.get_by_role("link", name="Packs")).to_have_count(0)  # an author: no Packs
    page.locator("#user-menu summary").click()
    menu.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in to Taskwright")).to_be_visible()
    assert console_log.errors == []


def test_project_page_at_10000_tasks_a_page_at_a_time(page: Page, live_server, console_log: ConsoleLog, screenshot_dir) -> None:
    base = live_server.url
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    admin = factories.member(project, Role.ADMIN, username="adam-admin")
    world = factories.world(project, author, title="Acme acquires Beta", documents=2)
    statuses = [EnvTaskStatus.DRAFT, EnvTaskStatus.IN_REVIEW, EnvTaskStatus.APPROVED, EnvTaskStatus.CHANGES_REQUESTED]
    EnvTask.objects.bulk_create(
        [EnvTask(project=project, world=world, title=f"Task {i:05d}", status=statuses[i % 4], created_by=author) for i in range(10_000)],
        batch_size=2000,
    )
    shots = screenshot_dir / "navigation"
    shots.mkdir(exist_ok=True)

    sign_in(page, base, admin.username)
    expect(page.get_by_role("navigation").get_by_role("link", name="Packs")).to_have_attribute("href", f"/projects/{project.pk}/packs/")
    began = time.perf_counter()
    page.goto(f"{base}/projects/{project.pk}/")
    took = time.perf_counter() - began
    tasks = page.locator("#task-list tbody tr")
    expect(tasks).to_have_count(50)
    expect(page.get_by_role("navigation", name="Pages of tasks")).to_contain_text("Page 1 of 200 · 10000 in all")
    assert took < 5, took
    page.screenshot(path=shots / "06-project-page-10000-tasks.png", full_page=True)

    page.get_by_label("Title contains").fill("Task 0004")
    page.get_by_label("Status").select_option("approved")
    page.get_by_role("button", name="Show").click()
    expect(tasks).to_have_count(2)  # 00042 and 00046: every fourth task is approved
    expect(page.locator("#task-count")).to_have_text("2 matching")
    page.get_by_role("link", name="Task", exact=True).click()  # sort by title
    expect(tasks.first).to_contain_text("Task 00042")
    expect(page.get_by_role("columnheader", name=re.compile("Task ↑"))).to_have_attribute("aria-sort", "ascending")
    page.screenshot(path=shots / "07-project-page-filtered.png", full_page=True)
    page.get_by_role("link", name="Clear").click()
    expect(page.get_by_role("navigation", name="Pages of tasks")).to_contain_text("10000 in all")
    page.get_by_role("link", name="Next").click()
    expect(page.get_by_role("navigation", name="Pages of tasks")).to_contain_text("Page 2 of 200")

    # New task: pick the world, give it a title.
    page.get_by_label("World it is set in").select_option(label="Acme acquires Beta")
    page.locator("#new-task").get_by_label("Title").fill("Find the escrow amount")
    page.get_by_role("button", name="New task").click()
    expect(page.get_by_role("heading", name=re.compile("Find the escrow amount"))).to_be_visible()
    assert console_log.errors == []


def test_world_editor_at_5000_documents_folder_by_folder(page: Page, live_server, console_log: ConsoleLog, screenshot_dir) -> None:
    from authoring.models import Document

    base = live_server.url
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    world = factories.world(project, author, title="Acme acquires Beta", documents=0)
    Document.objects.bulk_create(
        [Document(world=world, path=f"Folder {i % 50:02d}/Doc {i:05d}.md", position=i, brief=f"Brief {i}") for i in range(5_000)],
        batch_size=2000,
    )
    shots = screenshot_dir / "navigation"
    shots.mkdir(exist_ok=True)

    sign_in(page, base, author.username)
    page.goto(f"{base}/worlds/{world.pk}/")
    data_room = page.locator("#data-room")
    expect(data_room.get_by_text("5000 documents")).to_be_visible()
    expect(data_room.locator("tr.subfolder")).to_have_count(50)
    expect(data_room.locator("tr[id^=document-]")).to_have_count(0)
    page.evaluate("window.__sameDocument = true")
    data_room.get_by_role("link", name="Folder 07/").click()
    expect(page.get_by_role("navigation", name="Folder", exact=True)).to_contain_text("Data room › Folder 07")
    expect(page.locator("#document-tree tr[id^=document-]")).to_have_count(50)
    expect(page.get_by_role("navigation", name="Pages of this folder")).to_contain_text("Page 1 of 2 · 100 in all")
    assert page.url.endswith("?folder=Folder%2007")
    page.screenshot(path=shots / "08-world-editor-one-folder.png", full_page=True)
    page.get_by_role("navigation", name="Pages of this folder").get_by_role("link", name="Next").click()
    expect(page.get_by_role("navigation", name="Pages of this folder")).to_contain_text("Page 2 of 2")
    expect(page.locator("#document-tree")).to_contain_text("Doc 04957.md")
    page.get_by_role("navigation", name="Folder", exact=True).get_by_role("link", name="Data room").click()
    expect(page.locator("#data-room tr.subfolder")).to_have_count(50)
    assert page.evaluate("window.__sameDocument === true"), "opening a folder reloaded the page"
    assert console_log.errors == []
