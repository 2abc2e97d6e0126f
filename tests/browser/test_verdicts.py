"""Issue 15 in the browser: an author reads a graded trajectory with the judge's verdicts
beside the steps, clicks from a verdict to the step it rests on, and opens a model step's
exact request and response (loaded when the disclosure opens)."""

import json
import re

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services as authoring_services
from rollouts import services as rollout_services
from rollouts.grading.judge import SYSTEM as JUDGE_SYSTEM
from rollouts.models import Grade, GradeStatus
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import sign_in
from tests.fake_llm import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANSWER = "The purchase price is **$12m**, per Deal/Doc 1.md."


def respond(request) -> Reply:
    messages = request.body["messages"]
    if messages[0]["content"] == JUDGE_SYSTEM:
        if "Does not hedge" in messages[-1]["content"]:
            return Reply(
                structured={"explanation": "The final answer (step 3) gives one figure and no alternative.", "criteria_met": False}
            )
        return Reply(
            structured={
                "explanation": "Step 2 shows the document gives $12m; step 3 states exactly that.",
                "criteria_met": True,
                "steps": [2, 3],
            }
        )
    if not any(m["role"] == "assistant" for m in messages):
        return Reply(content="Let me read the document.", tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}])
    return Reply(content=ANSWER, input_tokens=400, output_tokens=60)


def test_an_author_reads_the_verdicts_beside_the_steps_and_a_steps_request(page: Page, live_server, fake_llm, endpoint, eager,
                                                                           console_log: ConsoleLog, screenshot_dir) -> None:
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="vera-verdicts")
    world = factories.world(project, author, drafted=True)
    env_task = authoring_services.env_task_create(world=world, user=author, title="State the purchase price",
                                                  prompt="Read the data room and state the purchase price.", reference_answer="$12m")
    rubric = env_task.rubric_versions.get()
    for text, points, tag in (
        ("States the price the documents give ($12m)", 5, "essential"),
        ("Does not hedge between several prices", -3, "pitfall"),
    ):
        authoring_services.criterion_add(env_task=env_task, user=author, base_revision=rubric.revision, text=text, points=points, tag=tag,
                                         grader_config={"sees": ["answer", "trajectory"]})
        rubric.refresh_from_db()
    fake_llm.responder = respond
    batch = rollout_services.rollout_batch_start(env_task=env_task, user=author, endpoint=endpoint, n=1)  # eager: runs and grades here
    rollout = batch.rollouts.get()
    assert Grade.objects.get(rollout=rollout).status == GradeStatus.GRADED
    _read, result, final = rollout.steps.order_by("index")

    base = live_server.url
    sign_in(page, base, author.username)
    page.goto(f"{base}/rollouts/{rollout.pk}/")
    panel = page.locator("#rollout-verdicts")
    expect(panel.get_by_role("heading", name="How the rubric graded it")).to_be_visible()
    expect(panel.locator("#rollout-grade")).to_contain_text("score 1.00")
    expect(panel.locator("#rollout-passed")).to_have_text("✓ pass")
    first = panel.locator(".traj-verdict").first
    expect(first).to_contain_text("States the price the documents give ($12m)")
    expect(first).to_contain_text("Step 2 shows the document gives $12m")
    expect(panel.locator(".traj-verdict").nth(1)).to_contain_text("absent")
    # Beside the steps, not under them.
    panel_box, steps_box = panel.bounding_box(), page.locator("#trajectory").bounding_box()
    assert panel_box["x"] > steps_box["x"] + steps_box["width"] - 1
    page.screenshot(path=screenshot_dir / "60-trajectory-verdicts.png", full_page=True)

    # A click from the verdict to the step it rests on.
    first.locator(".traj-rests-on").get_by_role("link", name="step 2").click()
    expect(page).to_have_url(re.compile(rf"#step-{result.pk}$"))
    expect(page.locator(f"#step-{result.pk}")).to_be_in_viewport()
    expect(page.locator(f"#step-{result.pk} .traj-cited")).to_contain_text("cited by criterion 1")

    # The final step's exact request and raw answer, loaded when the disclosure opens.
    step = page.locator(f"#step-{final.pk}")
    step.get_by_text("Show request and response").click()
    request_block = page.locator(f"#step-{final.pk}-request")
    expect(request_block).to_be_visible()
    sent = json.loads(request_block.inner_text())
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
    expect(page.locator(f"#step-{final.pk}-response")).to_contain_text('"chatcmpl-fake"')
    step.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "61-step-request-response.png")
    assert not console_log.errors, console_log.errors
