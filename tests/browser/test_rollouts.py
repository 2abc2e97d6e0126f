"""Trial runs through the browser, the Must-show of issue 5: a batch of 16 rollouts of a
task runs live against the fake model server on a real Celery worker. The progress bar
moves and rows update while it runs, then every rollout finishes; one trajectory is read
step by step; a comment is added; a step becomes a rubric criterion with the step as its
evidence; two trajectories are compared side by side."""

import re
import threading

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services
from llm.models import ModelEndpoint
from rollouts.grading.judge import SYSTEM as JUDGE_SYSTEM
from rollouts.models import Rollout, RolloutBatch, RolloutStatus, Step, StepComment, StepKind
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import assert_same_document, mark_page, sign_in
from tests.fake_llm import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROLLOUTS = 16
LATENCY = 0.3  # seconds per model call: slow enough to watch the batch run
BATCH_TIMEOUT_MS = 45_000
LOI = "Deal/Letter of intent.md"
RIGHT = ("The purchase price is **$12,000,000**, payable in cash at closing.\n\n"
         "- Source: Deal/Letter of intent.md, section 2\n- Closing: 2026-03-31")
WRONG = "The purchase price is **$11,500,000** (from the side letter).\n\n- Source: Notes/Side letter.md"


def agent_model():
    """A responder for the agent loop. Rollouts take one of two routes, by the order of
    their first call: A (2 model steps) lists the files and reads the LOI in parallel,
    then answers; B (3 model steps) searches, reads the LOI and writes a memo to its
    overlay, then answers — every second B answer cites the wrong price."""
    lock = threading.Lock()
    counters = {"first": 0, "final": 0}

    def respond(request):
        messages = request.body.get("messages", [])
        if messages and messages[0].get("content") == JUDGE_SYSTEM:  # finished rollouts are graded: answer at once
            answer = messages[-1]["content"].split("# The agent's final answer")[-1].split("\n# ")[0]
            return Reply(structured={"explanation": "Checked the final answer.", "criteria_met": "$12,000,000" in answer})
        assistant = [m for m in messages if m["role"] == "assistant"]
        if not assistant:
            with lock:
                route = "A" if counters["first"] % 2 == 0 else "B"
                counters["first"] += 1
            if route == "A":
                return Reply(content="I'll look at what the data room holds, and read the letter of intent.", delay=LATENCY, tool_calls=[
                    {"name": "list_files", "arguments": {"recursive": True}}, {"name": "read_file", "arguments": {"path": LOI}},
                ], input_tokens=1200, output_tokens=60)
            return Reply(content="Let me search for the price first.", delay=LATENCY, tool_calls=[
                {"name": "search_files", "arguments": {"query": "purchase price"}},
            ], input_tokens=1200, output_tokens=40)
        route = "B" if assistant[0]["content"].startswith("Let me search") else "A"
        if route == "B" and len(assistant) == 1:
            return Reply(content="Found it. Reading the LOI and noting the figure.", delay=LATENCY, tool_calls=[
                {"name": "read_file", "arguments": {"path": LOI}},
                {"name": "write_file",
                 "arguments": {"path": "Work/Price memo.md", "content": "# Price memo\n\nPurchase price: $12,000,000 (LOI, section 2)."}},
            ], input_tokens=1900, output_tokens=120)
        with lock:
            counters["final"] += 1
            wrong = route == "B" and counters["final"] % 2 == 0
        return Reply(content=WRONG if wrong else RIGHT, delay=LATENCY, input_tokens=2600, output_tokens=90)

    return respond


def deal_task(project, author):
    world = services.world_create(
        project_id=project.pk, user=author, title="Acme acquires Beta", outline="Acme Corp is buying **Beta Ltd**.",
        facts=[{"key": "Purchase price", "value": "$12,000,000"}],
    )
    services.document_create(world=world, user=author, path=LOI, content=(
        "# Letter of intent\n\n## 1. Parties\n\nAcme Corp (buyer) and Beta Ltd (seller).\n\n"
        "## 2. Price\n\nThe purchase price is $12,000,000, payable in cash at closing.\n\n## 3. Closing\n\nTarget closing date: 2026-03-31."
    ))
    services.document_create(
        world=world,
        user=author,
        path="Notes/Side letter.md",
        content="# Side letter\n\nDraft only: a price of $11,500,000 was discussed and rejected.",
    )
    env_task = services.env_task_create(
        world=world, user=author, title="State the purchase price",
        prompt="Read the data room and state the **purchase price** of Beta Ltd, citing the document it comes from.",
        reference_answer="$12,000,000, per the letter of intent (section 2).",
    )
    rubric = env_task.rubric_versions.get()
    services.criterion_add(
        env_task=env_task,
        user=author,
        base_revision=rubric.revision,
        text="States the purchase price of $12,000,000",
        points=3,
        tag="essential",
    )
    return env_task


def test_a_batch_of_trials_runs_live_and_every_trajectory_reads_step_by_step(
    page: Page, live_server, fake_llm, celery_worker_process, console_log: ConsoleLog, screenshot_dir
) -> None:
    base = live_server.url
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    env_task = deal_task(project, author)
    ModelEndpoint.objects.create(  # no api_key_env: the worker needs no key
        name="Fake GPT", kind="openai_compatible", base_url=fake_llm.url, model="fake-model", api_key_env="",
        max_concurrency=8, connect_timeout=2, read_timeout=10, max_retries=1, price_input_per_mtok="3.00", price_output_per_mtok="15.00",
    )
    ModelEndpoint.objects.create(name="Sample", kind="scripted")
    fake_llm.responder = agent_model()

    # 1. The task page loads its trials panel: the form, and the empty list.
    sign_in(page, base, author.username)
    page.goto(f"{base}/tasks/{env_task.pk}/?tab=trials")
    panel = page.locator("#trials-panel")
    expect(panel.get_by_role("heading", name="Run trials")).to_be_visible()
    expect(panel.locator("#trials-empty")).to_contain_text("No trials yet.")
    model = panel.get_by_label("Model", exact=True)
    expect(model).to_contain_text("Fake GPT · fake-model")
    expect(model).to_contain_text("Sample — scripted sample model, not a real model")
    model.select_option(label="Fake GPT · fake-model")
    panel.get_by_label("Number of rollouts (1–64)").fill(str(ROLLOUTS))
    expect(panel.get_by_label("Agent with the world's tools")).to_be_checked()
    panel.get_by_text("Limits, temperature and system prompt").click()
    expect(panel.get_by_label(re.compile("^System prompt"))).to_have_value(re.compile("^You are a careful professional"))
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=screenshot_dir / "31-trials-panel.png")

    # 2. Run trials: the live batch page opens and fills as the worker runs the rollouts.
    panel.get_by_role("button", name="Run trials").click()
    expect(page.get_by_role("heading", name=re.compile(r"^Trial batch \d+: State the purchase price"))).to_be_visible()
    batch = RolloutBatch.objects.get()
    assert (batch.n, batch.endpoint_name, batch.rubric_version.is_frozen) == (ROLLOUTS, "Fake GPT", True)
    live = page.locator("#batch-live")
    bar = live.get_by_role("progressbar")
    rows = live.locator("#rollouts tbody tr")
    expect(rows).to_have_count(ROLLOUTS)
    expect(live).to_have_attribute("hx-trigger", "every 2s")
    mark_page(page)
    # Part-way: some rollouts finished, others still running or queued, steps showing.
    expect(bar).to_have_attribute("aria-valuenow", re.compile(r"^[1-9][0-9]?$"), timeout=BATCH_TIMEOUT_MS)
    expect(live.locator("#batch-counts")).not_to_contain_text(f"{ROLLOUTS} of {ROLLOUTS}")
    expect(live.locator("#batch-state")).to_have_text("Running")
    expect(live.locator("#batch-usage")).not_to_contain_text("Tokens so far: 0 in")
    expect(rows.locator(".trials-pills i").first).to_be_visible()
    page.screenshot(path=screenshot_dir / "32-batch-live.png", full_page=True)
    # Then every rollout ends, and the live part stops polling.
    expect(bar).to_have_attribute("aria-valuenow", "100", timeout=BATCH_TIMEOUT_MS)
    expect(live).not_to_have_attribute("hx-trigger", re.compile(".*"))
    expect(live.locator("#batch-state")).to_have_text("Finished")
    expect(live.locator("#batch-counts")).to_contain_text(f"{ROLLOUTS} of {ROLLOUTS} finished")
    expect(live.locator("#batch-counts")).to_contain_text(f"{ROLLOUTS} completed")
    expect(live.get_by_role("button", name="Cancel batch")).to_have_count(0)
    expect(rows.filter(has_text="Completed")).to_have_count(ROLLOUTS)
    assert_same_document(page)  # the whole run was watched without a reload
    assert Rollout.objects.filter(batch=batch, status=RolloutStatus.COMPLETED).count() == ROLLOUTS
    for rollout in Rollout.objects.filter(batch=batch):
        indexes = list(rollout.steps.values_list("index", flat=True))
        assert indexes == list(range(len(indexes))) and len(indexes) in (4, 6)  # no step lost or doubled
    page.screenshot(path=screenshot_dir / "33-batch-done.png", full_page=True)

    # 3. Read one trajectory (a route-B rollout: it also wrote a memo) step by step.
    memo_writer = Rollout.objects.filter(batch=batch, steps__tool_name="write_file").order_by("index").first()
    plain = Rollout.objects.filter(batch=batch).exclude(pk=memo_writer.pk).exclude(steps__tool_name="write_file").order_by("index").first()
    number = memo_writer.index + 1
    live.locator(f"#rollout-row-{number}").get_by_role("link", name="Read").click()
    expect(page.get_by_role("heading", name=f"Rollout {number} of trial batch {batch.pk}")).to_be_visible()
    expect(page.locator("#rollout-status")).to_have_text("Completed")
    trajectory = page.locator("#trajectory")
    expect(trajectory.locator(".traj-user")).to_contain_text("state the purchase price of Beta Ltd")
    steps = trajectory.locator("#steps > article.traj-step")
    expect(steps).to_have_count(6)
    expect(steps.nth(0)).to_contain_text("Let me search for the price first.")
    expect(steps.nth(0).locator(".traj-args")).to_contain_text('"query": "purchase price"')  # pretty-printed arguments
    expect(steps.nth(1)).to_contain_text('search_files(query="purchase price")')
    expect(steps.nth(2)).to_contain_text("Model · asks for 2 tool calls")
    expect(steps.nth(3)).to_contain_text(f'read_file(path="{LOI}")')
    expect(steps.nth(3)).to_contain_text("The purchase price is $12,000,000")
    expect(steps.nth(4)).to_contain_text("write_file(")
    expect(steps.nth(5)).to_contain_text("Model · final answer")
    expect(steps.nth(5).locator(".traj-text strong").first).to_have_text(re.compile(r"^\$1[12],[05]00,000$"))  # markdown rendered
    for i in range(6):
        expect(steps.nth(i).locator(".traj-meta")).to_contain_text("took")
    expect(page.locator("#final-answer")).to_contain_text("The purchase price is")
    change = page.locator("#rollout-outcome .traj-change")
    expect(change).to_contain_text("Work/Price memo.md")
    expect(change.locator(".traj-diff .add").last).to_have_text("Purchase price: $12,000,000 (LOI, section 2).")
    # 4. A comment on a step, added in place.
    mark_page(page)
    read_step = steps.nth(3)
    read_step.get_by_text("Note on this step", exact=True).click()  # opens the comment box
    read_step.get_by_label("Comment on step 4").fill("Good: it went to the **signed** LOI, not the side letter.")
    read_step.get_by_role("button", name="Add comment").click()
    expect(read_step.locator(".traj-comment")).to_contain_text("alice-author")
    expect(read_step.locator(".traj-comment strong", has_text="signed")).to_be_visible()
    assert_same_document(page)
    page.screenshot(path=screenshot_dir / "34-trajectory.png", full_page=True)
    step_four = Step.objects.get(rollout=memo_writer, index=3)
    assert StepComment.objects.get().step_id == step_four.pk

    # 5. A criterion from the final answer step, with the step as its evidence.
    final = steps.nth(5)
    final.get_by_role("link", name="Make a criterion from this step").click()
    expect(page.get_by_role("heading", name=f"Make a criterion from rollout {number}, step 6")).to_be_visible()
    text = page.get_by_label("Criterion", exact=True)
    expect(text).to_have_value(re.compile(r'^States that "The purchase price is'))
    text.fill("Cites the letter of intent (section 2) as the source of the price")
    page.get_by_label("Points (negative = penalty)").fill("2")
    page.get_by_label("Tag").select_option("important")
    page.get_by_role("button", name="Add to the rubric").click()
    expect(page.get_by_role("status").filter(has_text=f"with Rollout {number}, step 6 as its evidence")).to_be_visible()
    row = page.locator("#criteria tr", has_text="Cites the letter of intent")
    expect(row).to_contain_text("2")
    evidence = row.get_by_role("link", name=f"Rollout {number}, step 6")
    expect(evidence).to_be_visible()
    expect(page.locator("#rubric h2")).to_contain_text("version 2")  # the batch's version 1 stays as it ran
    evidence.click()
    expect(page.get_by_role("heading", name=f"Rollout {number} of trial batch {batch.pk}")).to_be_visible()
    assert page.url.endswith(f"#step-{Step.objects.get(rollout=memo_writer, index=5).pk}")

    # 6. Two trajectories side by side.
    page.get_by_role("link", name=f"All rollouts of batch {batch.pk}").click()
    picker = page.locator("#compare-picker")
    picker.get_by_label("Left").select_option(label=f"Rollout {plain.index + 1}")
    picker.get_by_label("Right").select_option(label=f"Rollout {number}")
    picker.get_by_role("button", name="Compare side by side").click()
    expect(page.get_by_role("heading", name=f"Rollout {plain.index + 1} and rollout {number}, side by side")).to_be_visible()
    left, right = page.locator("#compare-left"), page.locator("#compare-right")
    expect(left.locator("article.traj-step")).to_have_count(4)
    expect(right.locator("article.traj-step")).to_have_count(6)
    expect(left).to_contain_text("Files changed: none")
    expect(right).to_contain_text("Work/Price memo.md")
    expect(right.locator(".traj-comment")).to_contain_text("signed")
    page.screenshot(path=screenshot_dir / "35-compare.png", full_page=True)

    assert console_log.errors == []
    assert Step.objects.filter(rollout__batch=batch, kind=StepKind.TOOL, is_error=True).count() == 0
