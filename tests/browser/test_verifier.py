"""The verifier's Must-show, in the browser: on a task with a graded trial batch the author
sees the score distribution, the pass@k curve and its band; runs the reward-hacking probes
and sees a flagged probe with the criterion it fooled; ranks the trajectories and sees tau
and rho; tightens the fooled criterion in the rubric editor (a new rubric version);
regrades; and sees the numbers change.

The batch is built up front through the services (the fake model server answers as the
agent; deterministic checks grade it). From then on a real Celery worker grades the
probes and the regrade, and the pages poll until the grades are in."""

import re

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services as authoring_services
from llm.models import ModelEndpoint
from rollouts import services as rollout_services
from rollouts.agent import rollout_execute
from rollouts.grading.services import grade_execute
from rollouts.models import Grade, GradeStatus
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import sign_in
from tests.fake_llm import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GRADING_TIMEOUT_MS = 30_000
# The agent's answers, by rollout: the expert's order is A, B, C, D.
A, B, C, D = ("The purchase price is $12,000,000.", "The price is $12m per the signed SPA.", "The price could be $12m or $15m.",
              "Roughly 12 to 15 million, unclear.")
ANSWERS = [D, A, C, B]


def graded_trial_batch(fake_llm, author) -> tuple:
    """A task with a weak rubric (the price criterion only looks for "12") and a batch of four
    graded rollouts. Jobs this queues on the broker are purged when the worker starts."""
    project = factories.project("Corporate law — M&A")
    factories.member(project, Role.AUTHOR, username=author)
    user = project.memberships.get().user
    world = factories.world(project, user, title="Acme acquires Beta", documents=2)
    env_task = authoring_services.env_task_create(world=world, user=user, title="State the purchase price",
                                                  prompt="Read the data room and state the purchase price.",
                                                  reference_answer="The purchase price is $12,000,000.")
    for text, points, config in (("States the purchase price of $12m", 5, {"check": "contains", "value": "12"}),
                                 ("Mentions the price", 1, {"check": "contains", "value": "price"})):
        rubric = env_task.rubric_versions.get()
        authoring_services.criterion_add(env_task=env_task, user=user, base_revision=rubric.revision, text=text, points=points,
                                         tag="essential", grader_kind="check", grader_config=config)
    endpoint = ModelEndpoint.objects.create(name="Fake GPT", kind="openai_compatible", base_url=fake_llm.url, model="fake-model",
                                            api_key_env="", max_concurrency=4, connect_timeout=2, read_timeout=5, max_retries=1)
    answers = iter(ANSWERS)
    fake_llm.responder = lambda request: Reply(content=next(answers))
    batch = rollout_services.rollout_batch_start(env_task=env_task, user=user, endpoint=endpoint, n=len(ANSWERS))
    for rollout in batch.rollouts.order_by("index"):
        rollout_execute(rollout_id=rollout.pk)
    for grade in Grade.objects.filter(rollout__batch=batch).order_by("pk"):
        grade_execute(grade_id=grade.pk)
    assert set(Grade.objects.filter(rollout__batch=batch).values_list("status", flat=True)) == {GradeStatus.GRADED}
    return env_task, batch


def shoot_around(page: Page, locator, path) -> None:
    """A screenshot of one part of the page, with a margin of the page around it."""
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()  # in the viewport; the clip of a full-page shot is in the page
    top = box["y"] + page.evaluate("window.scrollY")
    page.screenshot(path=path, full_page=True, clip={"x": max(0, box["x"] - 24), "y": max(0, top - 24), "width": box["width"] + 48,
                                                      "height": box["height"] + 48})


def test_author_makes_the_verifier_trustworthy(page: Page, live_server, fake_llm, request, console_log: ConsoleLog, screenshot_dir) -> None:
    base = live_server.url
    env_task, batch = graded_trial_batch(fake_llm, "alice-author")
    request.getfixturevalue("celery_worker_process")  # from here on, a real worker grades

    # 1. The task page's Verifier panel: difficulty of the latest batch, the score distribution.
    sign_in(page, base, "alice-author")
    page.goto(f"{base}/tasks/{env_task.pk}/?tab=verifier")
    panel = page.locator("#verifier-panel")
    expect(panel.get_by_role("heading", name="Verifier", exact=True)).to_be_visible()
    expect(panel.locator("#q-band")).to_have_text("too easy")
    expect(panel.locator("#q-pass-at-k circle.q-point")).to_have_count(3)  # k = 1, 2, 4
    expect(panel.locator("#q-score-distribution rect.q-bar")).to_have_count(10)
    counts = panel.locator("#q-score-distribution rect.q-bar").evaluate_all("bars => bars.map(b => Number(b.dataset.count))")
    assert counts == [0] * 8 + [1, 3], counts
    expect(panel.locator("#q-pass-at-k")).to_contain_text("4 of 4 passed")
    panel.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "41-verifier.png", full_page=True)

    # 2. Reward-hacking probes, with a cheat a model writes against the rubric: the worker writes it (the
    # request does not wait for the model) and grades every probe; the page polls until they are in.
    # One call per kind of cheat (five), the first slow enough to see it being written.
    fake_llm.script(Reply(structured={"answers": ["The price is 12, as agreed."]}, delay=1.5))
    fake_llm.responder = lambda request: Reply(structured={"answers": ["The price is 12, as agreed."]})
    probes = page.locator("#q-probes")
    expect(probes.get_by_label("Judge model")).to_contain_text("Fake GPT")
    probes.get_by_label("Model that writes cheats aimed at the rubric (optional)").select_option(label="Fake GPT · fake-model")
    probes.get_by_role("button", name="Run the probes").click()
    expect(page.locator("#q-probe-cheats")).to_contain_text("Writing the cheat answers with the model…")
    expect(page.locator("#q-probe-summary")).to_contain_text("6 flagged", timeout=GRADING_TIMEOUT_MS)
    expect(page.locator("#q-probe-cheats")).to_have_count(0)
    expect(page.locator("#q-probe-results tr.q-flagged", has_text="Model-written hedge 1")).to_contain_text(
        "States the purchase price of $12m"
    )
    hedging = page.locator("#q-probe-results tr.q-flagged", has_text="Hedges on the amount: $12,000,000")
    expect(hedging).to_contain_text("Flagged")
    expect(hedging).to_contain_text("States the purchase price of $12m")
    expect(page.locator("#q-probe-results tr", has_text="A refusal")).not_to_have_class(re.compile("q-flagged"))
    shoot_around(page, page.locator("#q-probes"), screenshot_dir / "42-probes.png")

    # 3. The batch quality page: a wrong verdict marked, the trajectories ranked best first.
    page.locator("#q-batch-quality-link").click()
    expect(page.get_by_role("heading", name=f"Quality of trial batch {batch.pk}")).to_be_visible()
    hedge_row = page.locator("#q-rollout-3")
    hedge_row.get_by_text("Verdicts per criterion").click()
    hedge_row.get_by_role("button", name="Rollout 3: criterion not met").first.click()
    expect(hedge_row.locator("tr.q-disagree")).to_have_count(1)
    expect(page.locator("#q-agreement tr", has_text="States the purchase price")).to_contain_text("1")

    ranking = page.locator("#q-ranking")

    def order() -> list[str]:
        return [text.split("\n")[0].strip() for text in ranking.locator(".q-rank-body strong").all_inner_texts()]

    def move(number: int, direction: str) -> None:
        before = order()
        ranking.get_by_role("button", name=f"Move rollout {number} {direction}").click()
        expect(ranking.locator(".q-rank-body strong")).not_to_have_text(before)

    expect(ranking).to_contain_text("Not saved yet")
    by_answer = {answer: f"Rollout {i + 1}" for i, answer in enumerate(ANSWERS)}
    for _ in range(3):
        move(1, "down")  # D is the worst
    move(4, "up")  # B above C
    assert order() == [by_answer[a] for a in (A, B, C, D)], order()
    expect(ranking.locator("#q-tau")).to_have_text("0.71")
    expect(ranking.locator("#q-rho")).to_have_text("0.77")
    expect(ranking.locator("#q-scatter circle")).to_have_count(4)
    ranking.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "43-ranking.png", full_page=True)

    # 4. Back on the task page: the fooled criterion opens for editing right from the probe.
    page.goto(f"{base}/tasks/{env_task.pk}/?tab=verifier")
    flagged = page.locator("#q-probe-results tr.q-flagged", has_text="Hedges on the amount: $12,000,000")
    flagged.get_by_role("link", name="Tighten this criterion").click()
    editing = page.locator("#rubric tr.editing")
    expect(editing).to_be_visible()
    editing.get_by_label("Criterion text").fill("States that the price is $12m (a single, committed figure)")
    editing.get_by_label("Deterministic check").check()
    editing.get_by_label("Check", exact=True).select_option("regex")
    editing.get_by_label("Pattern").fill(r"price is \$12(,000,000|m)\b")
    expect(editing.get_by_label("Text or value")).to_be_hidden()  # only the chosen check's settings show
    editing.get_by_role("button", name="Save").click()
    expect(page.locator("#rubric h2")).to_contain_text("version 2")
    expect(page.locator("#rubric")).to_contain_text("Check: regex")
    stale = page.locator("#q-rubric-stale")
    expect(stale).to_contain_text("now version 2")

    # 5. Regrade (back in the Verifier quality tab): the worker grades against version 2; the numbers change.
    page.get_by_role("tab", name="Verifier quality").click()
    stale.get_by_role("button", name="Regrade the batch with version 2").click()
    expect(page.get_by_role("heading", name="Grades under rubric version 2")).to_be_visible()
    changes = page.locator("#q-changes")
    expect(changes).to_contain_text("0.96 → 0.54", timeout=GRADING_TIMEOUT_MS)
    expect(changes).to_contain_text("4 → 2")
    expect(page.locator("#q-grading")).not_to_have_attribute("hx-trigger", "every 2s")
    expect(page.locator("#q-tau")).to_have_text("0.91")  # the ranking refreshed itself once the grades were in
    page.screenshot(path=screenshot_dir / "44-regrade.png", full_page=True)

    page.goto(f"{base}/tasks/{env_task.pk}/?tab=verifier")
    expect(page.locator("#q-band")).to_have_text("learnable")
    expect(page.locator("#q-pass-at-k")).to_contain_text("2 of 4 passed")
    assert console_log.errors == []
