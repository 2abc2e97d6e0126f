"""Issue 17 in the browser: the work an expert does hundreds of times, by keyboard alone.

Verdicts on a graded batch of 8 marked with j / m / n / c (checked in the database), the
ranking reordered with Shift+J, the steps of a trajectory walked with j / k, a review's
checklist answered with p / f and its Approve button selected with `a` (never sent by one
key), and the `?` list of the page's shortcuts (a modal dialog Escape closes)."""

import re

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from accounts.models import Role
from rollouts.models import (
    ExpertVerdict,
    Grade,
    GradeStatus,
    Ranking,
    Rollout,
    RolloutBatch,
    RolloutStatus,
    Step,
    StepKind,
    Verdict,
)
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

N = 8
# The expert's calls, rollout by rollout, criterion by criterion: m = met, n = not met. The judge
# said met everywhere, so each `n` is a disagreement the page must show.
# Waits for a saved change to come back (the machine running the tests may be busy).
SAVED = 20_000
CALLS = ["mmn", "nmm", "mmm", "mnm", "mmn", "nnm", "mmm", "mnn"]


def graded_batch(env_task) -> RolloutBatch:
    """A finished batch of N completed rollouts graded on the task's rubric, with the judge's
    verdict on each criterion (the rows a real run and its grading leave)."""
    rubric = env_task.rubric_versions.order_by("-number").first()
    criteria = list(rubric.criteria.order_by("position"))
    batch = RolloutBatch.objects.create(env_task=env_task, project_id=env_task.project_id, rubric_version=rubric,
                                        task_snapshot={"title": env_task.title, "prompt": env_task.prompt, "revision": 1},
                                        endpoint_name="scripted", n=N)
    for i in range(N):
        rollout = Rollout.objects.create(batch=batch, index=i, status=RolloutStatus.COMPLETED,
                                         final_answer=f"Trajectory {i + 1}: the price is $12m.")
        grade = Grade.objects.create(rollout=rollout, rubric_version=rubric, status=GradeStatus.GRADED, passed=True, score=1.0,
                                     met_points=12, positive_points=12, graded_at=timezone.now())
        for criterion in criteria:
            Verdict.objects.create(grade=grade, criterion=criterion, met=True, rationale=f"The answer covers it (rollout {i + 1}).")
    return batch


def calls_in_db(batch, expert) -> list[str]:
    rows = {(v.rollout.index, v.criterion.position): v.met
            for v in ExpertVerdict.objects.filter(rollout__batch=batch, expert=expert).select_related("rollout", "criterion")}
    positions = sorted({p for _, p in rows} | set(batch.rubric_version.criteria.values_list("position", flat=True)))
    return ["".join("-" if (i, p) not in rows else "m" if rows[(i, p)] else "n" for p in positions) for i in range(N)]


@pytest.fixture
def expert_batch(db):
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="kim-keys")
    world = factories.world(project, author)
    env_task = factories.env_task(world, author, title="State the purchase price", criteria=3)
    return author, graded_batch(env_task)


def test_an_expert_marks_the_verdicts_of_a_batch_of_8_by_keyboard_alone(page: Page, live_server, expert_batch, console_log: ConsoleLog,
                                                                        screenshot_dir) -> None:
    author, batch = expert_batch
    base = live_server.url
    sign_in(page, base, author.username)
    page.goto(f"{base}/batches/{batch.pk}/quality/")
    expect(page.locator("#kbd-hint")).to_be_visible()
    cells = page.locator("tr.q-verdict")
    expect(cells).to_have_count(N * 3)
    expect(cells.first).to_be_hidden()  # inside the closed "Verdicts per criterion" disclosures

    page.keyboard.press("j")  # the first verdict: its disclosure opens, it has the focus
    expect(cells.first).to_be_visible()
    expect(cells.first).to_be_focused()
    expect(cells.first).to_have_class(re.compile(r"\bkbd-current\b"))

    for r, calls in enumerate(CALLS):
        for c, key in enumerate(calls):
            cell = cells.nth(r * 3 + c)
            expect(cell).to_be_focused()
            page.keyboard.press(key)
            pressed = "criterion met" if key == "m" else "criterion not met"
            expect(cell.get_by_role("button", name=f"Rollout {r + 1}: {pressed}")).to_have_attribute("aria-pressed", "true", timeout=SAVED)
        if r == 1:
            page.screenshot(path=screenshot_dir / "170-keyboard-verdicts.png", full_page=False)
    expect(cells.last).to_be_focused(timeout=SAVED)  # the last: m/n went on to the next each time, and stop at the end
    assert calls_in_db(batch, author) == CALLS
    expect(page.locator(".q-verdict.q-disagree")).to_have_count(sum(call.count("n") for call in CALLS), timeout=SAVED)

    # k goes back; c clears the call (agree with the judge again) and stays on it.
    page.keyboard.press("k")
    page.keyboard.press("k")
    third_last = cells.nth(N * 3 - 3)
    expect(third_last).to_be_focused()
    page.keyboard.press("c")
    agree = third_last.get_by_role("button", name=f"Agree with judge, rollout {N}")
    expect(agree).to_have_attribute("aria-pressed", "true", timeout=SAVED)
    expect(third_last).to_be_focused()
    assert calls_in_db(batch, author)[-1] == "-nn"

    # Nothing fires while typing in a field: "n" typed into a ranking position changes no verdict.
    before = ExpertVerdict.objects.filter(rollout__batch=batch).count()
    position = page.get_by_label("Position of rollout 1")
    position.focus()
    page.keyboard.press("n")
    page.keyboard.press("j")
    expect(position).to_be_focused()
    assert ExpertVerdict.objects.filter(rollout__batch=batch).count() == before

    # Ranking: r goes to it, Shift+J moves the trajectory down (saved at once), and it keeps the focus.
    position.blur()
    page.keyboard.press("r")
    first_rank = page.locator('[data-kbd-item="rank"]').first
    expect(first_rank).to_be_focused()
    expect(first_rank).to_contain_text("Rollout 1")
    page.keyboard.press("Shift+J")
    expect(page.locator('[data-kbd-item="rank"]').nth(1)).to_contain_text("Rollout 1", timeout=SAVED)
    moved = page.locator('[data-kbd-item="rank"]').nth(1)
    expect(moved).to_be_focused(timeout=SAVED)
    page.keyboard.press("Shift+J")  # once more: it goes on down, and keeps the focus
    expect(page.locator('[data-kbd-item="rank"]').nth(2)).to_contain_text("Rollout 1", timeout=SAVED)
    expect(page.locator('[data-kbd-item="rank"]').nth(2)).to_be_focused(timeout=SAVED)
    indexes = {r.pk: r.index for r in batch.rollouts.all()}
    assert [indexes[pk] for pk in Ranking.objects.get(batch=batch, expert=author).order][:3] == [1, 2, 0]
    page.screenshot(path=screenshot_dir / "171-keyboard-ranking.png", full_page=False)
    assert console_log.errors == []


def test_the_question_mark_lists_the_pages_shortcuts_and_escape_closes_it(page: Page, live_server, expert_batch,
                                                                          console_log: ConsoleLog, screenshot_dir) -> None:
    author, batch = expert_batch
    base = live_server.url
    sign_in(page, base, author.username)
    page.goto(f"{base}/batches/{batch.pk}/quality/")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_hidden()
    page.keyboard.press("?")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading", name="Your verdicts")).to_be_visible()
    expect(dialog.get_by_role("heading", name="Your ranking")).to_be_visible()
    expect(dialog.get_by_role("heading", name="The trajectory")).to_be_hidden()  # not this page's
    expect(dialog.get_by_role("heading", name="Your review")).to_be_hidden()
    expect(dialog).to_contain_text("Mark the criterion not met, then go to the next verdict")
    page.screenshot(path=screenshot_dir / "172-keyboard-overlay.png", full_page=False)
    page.keyboard.press("m")  # the page's keys wait while the list is open
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert not ExpertVerdict.objects.exists()
    # The link in the page opens it too, and its Close button closes it.
    page.get_by_role("button", name="show them").click()
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()

    # A page without shortcuts of its own says where they are.
    page.goto(f"{base}/models/")
    expect(page.locator("#kbd-hint")).to_be_hidden()
    page.keyboard.press("?")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("This page has no shortcuts of its own")
    expect(dialog.get_by_role("heading", name="Your verdicts")).to_be_hidden()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert console_log.errors == []


def test_j_and_k_walk_the_steps_of_a_trajectory(page: Page, live_server, expert_batch, console_log: ConsoleLog) -> None:
    author, batch = expert_batch
    rollout = batch.rollouts.get(index=0)
    for i in range(4):
        if i % 2 == 0:
            Step.objects.create(rollout=rollout, index=i, kind=StepKind.MODEL, text=f"Thinking {i}",
                                tool_calls=[{"id": f"c{i}", "name": "list_files", "arguments": {}}])
        else:
            Step.objects.create(rollout=rollout, index=i, kind=StepKind.TOOL, text=f"result {i}", tool_call_id=f"c{i - 1}",
                                tool_name="list_files", arguments={})
    base = live_server.url
    sign_in(page, base, author.username)
    page.goto(f"{base}/rollouts/{rollout.pk}/")
    steps = page.locator('[data-kbd-item="step"]')
    expect(steps).to_have_count(4)
    page.keyboard.press("j")
    expect(steps.nth(0)).to_be_focused()
    page.keyboard.press("j")
    page.keyboard.press("ArrowDown")
    expect(steps.nth(2)).to_be_focused()
    page.keyboard.press("k")
    expect(steps.nth(1)).to_be_focused()
    expect(steps.nth(1)).to_contain_text("Tool result")
    assert console_log.errors == []


def test_a_reviewer_answers_the_checklist_by_keyboard_and_approve_waits_for_enter(page: Page, live_server, console_log: ConsoleLog,
                                                                                  screenshot_dir) -> None:
    from reviews import services as review_services
    from reviews.models import Review, SubmissionStatus

    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="ada-author")
    reviewer = factories.member(project, Role.REVIEWER, username="rui-reviewer")
    world = factories.world(project, author, drafted=True)
    env_task = factories.env_task(world, author, criteria=2)
    submission = review_services.submission_create(env_task=env_task, user=author)
    assert review_services.submission_claim_next(user=reviewer) == submission

    base = live_server.url
    sign_in(page, base, reviewer.username)
    page.goto(f"{base}/submissions/{submission.pk}/")
    items = page.locator('[data-kbd-item="check"]')
    count = items.count()
    assert count >= 2
    page.keyboard.press("j")
    expect(items.first).to_be_focused()
    for i in range(count):
        page.keyboard.press("f" if i == 1 else "p")
    expect(items.nth(0).get_by_label("Pass")).to_be_checked()
    expect(items.nth(1).get_by_label("Fail")).to_be_checked()
    expect(items.nth(count - 1).get_by_label("Pass")).to_be_checked()

    page.keyboard.press("a")
    approve = page.get_by_role("button", name="Approve", exact=True)
    expect(approve).to_be_focused()
    expect(page.locator("#kbd-status")).to_contain_text("press Enter to approve")
    page.screenshot(path=screenshot_dir / "173-keyboard-review.png", full_page=False)
    page.keyboard.press("a")  # one key, however often, sends nothing
    assert not Review.objects.exists()
    page.keyboard.press("d")
    expect(page.locator("#id_comment")).to_be_focused()
    page.keyboard.type("a p f")  # typed into the comment, not taken as shortcuts
    expect(page.locator("#id_comment")).to_have_value("a p f")
    assert not Review.objects.exists()
    submission.refresh_from_db()
    assert submission.status != SubmissionStatus.APPROVED
    assert console_log.errors == []


def settling_slowly(page: Page, live_server, author, batch) -> None:
    """The batch's quality page, with htmx settling swapped content 1.5 s after the swap
    instead of 20 ms: the window a loaded machine opens, made wide enough to act in."""
    sign_in(page, live_server.url, author.username)
    page.goto(f"{live_server.url}/batches/{batch.pk}/quality/")
    page.evaluate("htmx.config.defaultSettleDelay = 1500")


def test_a_field_focused_while_a_swap_settles_keeps_the_focus(page: Page, live_server, expert_batch, console_log: ConsoleLog) -> None:
    """A marked verdict's row is swapped at once and settled later (htmx's settle delay, longer
    on a busy machine): a field the expert moves to in between keeps the focus, rather than
    the verdict taking it back when the swap settles."""
    settling_slowly(page, live_server, *expert_batch)
    cells = page.locator("tr.q-verdict")
    page.keyboard.press("j")
    expect(cells.first).to_be_focused()
    page.keyboard.press("n")  # marks the first verdict not met and goes on to the second
    expect(cells.first.get_by_role("button", name="Rollout 1: criterion not met")).to_have_attribute("aria-pressed", "true", timeout=SAVED)
    position = page.get_by_label("Position of rollout 1")
    position.focus()  # before the swap has settled
    page.wait_for_timeout(2_500)  # it has now
    expect(position).to_be_focused()
    page.keyboard.press("j")  # typed into the field, not a shortcut
    expect(position).to_be_focused()
    assert console_log.errors == []


def test_a_key_pressed_before_a_swap_settles_waits_for_it(page: Page, live_server, expert_batch, console_log: ConsoleLog) -> None:
    """A moved trajectory's list is swapped at once and wired up by htmx when it settles
    (later on a busy machine): a second Shift+J in between used to post the form as a plain
    page, which reloaded it and lost the focus. The key waits for the settling."""
    author, batch = expert_batch
    settling_slowly(page, live_server, author, batch)
    page.evaluate("window.__samePage = true")
    items = page.locator('[data-kbd-item="rank"]')
    page.keyboard.press("r")
    expect(items.first).to_be_focused()
    page.keyboard.press("Shift+J")
    expect(items.nth(1)).to_contain_text("Rollout 1", timeout=SAVED)  # swapped, not yet settled
    page.keyboard.press("Shift+J")
    expect(items.nth(2)).to_contain_text("Rollout 1", timeout=SAVED)
    expect(items.nth(2)).to_be_focused(timeout=SAVED)
    assert page.evaluate("window.__samePage === true")  # no reload
    indexes = {r.pk: r.index for r in batch.rollouts.all()}
    assert [indexes[pk] for pk in Ranking.objects.get(batch=batch, expert=author).order][:3] == [1, 2, 0]
    assert console_log.errors == []

