"""No edit is dropped without a word (issue 17), in a real browser with the CSP on:
"Save task" with a criterion editor open saves both; leaving a page with unsaved changes
asks first (and not after a save); a rubric button that would wipe an open editor asks;
negative points pick the Pitfall tag; "Add a fact" adds a row in place; a suggested
skeleton shows its problems in words and is edited before it is accepted."""

import pytest
from playwright.sync_api import Dialog, Page, expect

from accounts.models import Role
from authoring.models import SkeletonProposal
from authoring.services import skeletons
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _world_and_task():
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    world = factories.world(project, author)
    return world, factories.env_task(world, author), author


def test_open_criterion_edit_is_saved_with_the_task_and_leaving_asks_first(
    page: Page, live_server, console_log: ConsoleLog, screenshot_dir
) -> None:
    base = live_server.url
    world, env_task, _ = _world_and_task()
    dialogs: list[Dialog] = []

    def answer(dialog: Dialog) -> None:
        dialogs.append(dialog)
        dialog.dismiss()  # stay on the page / do not go on

    page.on("dialog", answer)
    sign_in(page, base, "alice-author")
    page.goto(f"{base}/tasks/{env_task.pk}/")
    rubric = page.locator("#rubric")
    first = rubric.locator("#criteria tr", has_text="States fact 1")
    first.get_by_role("button", name="Edit criterion").click()
    editing = rubric.locator("tr.editing")
    expect(editing).to_be_visible()
    editing.get_by_label("Criterion text").fill("States the purchase price: $12,000,000")

    # A rubric button that would replace the open editor asks first; dismissed, nothing happens.
    rubric.locator("#criteria tr", has_text="States fact 2").get_by_role("button", name="Delete criterion").click()
    expect(editing).to_be_visible()
    assert dialogs and dialogs[-1].type == "confirm" and "unsaved changes in an open criterion editor" in dialogs[-1].message
    assert env_task.rubric_versions.order_by("-number").first().criteria.count() == 2

    # Leaving the page asks (the browser's own "Leave site?"); dismissed, the page stays with the edit.
    page.get_by_label("Prompt: what the agent is asked to do").fill("State the purchase price and where it comes from.")
    page.get_by_role("link", name=world.title).first.click()
    page.wait_for_timeout(500)
    assert dialogs[-1].type == "beforeunload"
    expect(page).to_have_url(f"{base}/tasks/{env_task.pk}/")
    expect(editing.get_by_label("Criterion text")).to_have_value("States the purchase price: $12,000,000")
    page.locator("#task-form").scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "17-unsaved-open-criterion.png", full_page=True)

    # "Save task" saves the prompt and the open criterion edit together.
    page.get_by_role("button", name="Save task").click()
    expect(page.locator("#task-form")).to_contain_text("Saved: the task and 1 open criterion edit.")
    expect(rubric.locator("#criteria")).to_contain_text("States the purchase price: $12,000,000")
    expect(rubric.locator("tr.editing")).to_have_count(0)
    env_task.refresh_from_db()
    assert env_task.prompt == "State the purchase price and where it comes from."
    texts = list(env_task.rubric_versions.order_by("-number").first().criteria.values_list("text", flat=True))
    assert texts == ["States the purchase price: $12,000,000", "States fact 2"]
    page.screenshot(path=screenshot_dir / "17-unsaved-saved-both.png", full_page=True)

    # Negative points pick Pitfall, unless the author chose a tag.
    page.get_by_label("Points (negative = penalty)").fill("-3")
    expect(page.locator("#new-criterion-tag")).to_have_value("pitfall")
    page.get_by_label("Points (negative = penalty)").fill("2")
    expect(page.locator("#new-criterion-tag")).to_have_value("important")
    page.get_by_label("Points (negative = penalty)").fill("1")  # as served: nothing unsaved

    # After a save nothing is unsaved: leaving does not ask.
    count = len(dialogs)
    page.get_by_role("link", name=world.title).first.click()
    expect(page.get_by_role("heading", name=world.title, exact=True)).to_be_visible()
    assert len(dialogs) == count
    assert console_log.errors == []


def test_facts_rows_and_a_checked_skeleton_on_the_world_editor(page: Page, live_server, console_log: ConsoleLog, screenshot_dir) -> None:
    base = live_server.url
    world, _, author = _world_and_task()
    proposal = SkeletonProposal.objects.create(world=world, endpoint_name="Fake GPT", status="ready", items=[
        {"path": "Deal/SPA.docx", "kind": "chat", "format": "", "brief": "The share purchase agreement", "target_size": 900,
         "metadata": {}, "accepted": False, "problem": ""},
        {"path": "Mail/Kickoff", "kind": "email", "format": "", "brief": "Kick-off email", "target_size": 150,
         "metadata": {"subject": "Kick-off"}, "accepted": False, "problem": ""},
    ])
    skeletons.skeleton_item_reject(proposal=proposal, user=author, index=1, rejected=False)  # checks every item
    sign_in(page, base, "alice-author")
    page.goto(f"{base}/worlds/{world.pk}/")

    # "Add a fact" adds rows in place; they are saved with the scenario.
    rows = page.locator("#facts-rows tr")
    before = rows.count()
    page.get_by_role("button", name="Add a fact").click()
    page.get_by_role("button", name="Add a fact").click()
    expect(rows).to_have_count(before + 2)
    rows.nth(before - 1).get_by_label("New fact").fill("Purchase price")
    rows.nth(before - 1).get_by_label("New value").fill("$12,000,000")
    rows.nth(before).get_by_label("New fact").fill("Closing date")
    rows.nth(before).get_by_label("New value").fill("2026-03-31")
    page.get_by_role("button", name="Save scenario").click()
    expect(page.locator("#world-form")).to_contain_text("Saved.")
    world.refresh_from_db()
    assert {"key": "Closing date", "value": "2026-03-31"} in world.facts
    assert {"key": "Purchase price", "value": "$12,000,000"} in world.facts

    # The proposal says what is wrong in words, and the author fixes the item before accepting.
    panel = page.locator("#skeleton-proposal")
    expect(panel).to_contain_text("A .docx is a file, not a chat message: choose File or rename it.")
    expect(panel.get_by_role("button", name="Accept Deal/SPA.docx")).to_have_count(0)
    panel.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "17-skeleton-problem.png", full_page=True)
    panel.get_by_role("button", name="Edit Deal/SPA.docx").click()
    editor = panel.locator("tr.editing")
    editor.get_by_label("Kind").select_option("file")
    editor.get_by_role("button", name="Save item").click()
    expect(panel).not_to_contain_text("not a chat message")
    panel.get_by_role("button", name="Accept all").click()
    expect(page.locator("#document-tree")).to_contain_text("SPA.docx")
    assert sorted(world.documents.filter(path__in=["Deal/SPA.docx", "Mail/Kickoff"]).values_list("path", "kind")) == [
        ("Deal/SPA.docx", "file"), ("Mail/Kickoff", "email"),
    ]
    page.screenshot(path=screenshot_dir / "17-skeleton-accepted.png", full_page=True)
    assert console_log.errors == []
