"""The probes' Must-show, in the browser: an author runs the reward-hacking probes on a task
whose rubric pins no value, sees the flagged near miss with the criterion it fooled and the
suggested fix, takes the fix (a new rubric version), runs the probes again and sees them clear.

A real Celery worker grades the probes; the judge is the fake model server, reading each
criterion literally (tests/grading/planted/judge.py: a criterion that names a value needs it,
unhedged; one that names none is met by any price)."""

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services as authoring_services
from llm.models import ModelEndpoint
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import sign_in
from tests.grading.planted.judge import judge_by_rules, value_rule

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GRADING_TIMEOUT_MS = 30_000


def test_author_finds_a_weak_criterion_with_the_probes_fixes_it_and_sees_them_clear(
    page: Page, live_server, fake_llm, request, console_log: ConsoleLog, screenshot_dir
) -> None:
    base = live_server.url
    project = factories.project("Corporate law — M&A")
    factories.member(project, Role.AUTHOR, username="alice-author")
    user = project.memberships.get().user
    world = factories.world(project, user, title="Acme acquires Beta", documents=1)
    env_task = authoring_services.env_task_create(world=world, user=user, title="State the purchase price",
                                                  prompt="Read the SPA in the data room and state the purchase price.",
                                                  reference_answer="The purchase price is $48.5 million.")
    rubric = env_task.rubric_versions.get()
    authoring_services.criterion_add(env_task=env_task, user=user, base_revision=rubric.revision, text="States the purchase price",
                                     points=4, tag="essential")
    ModelEndpoint.objects.create(name="Fake GPT", kind="openai_compatible", base_url=fake_llm.url, model="fake-model", api_key_env="",
                                 max_concurrency=4, connect_timeout=2, read_timeout=5, max_retries=1)
    fake_llm.responder = judge_by_rules(value_rule)
    request.getfixturevalue("celery_worker_process")

    # 1. Run the probes from the task page: the worker grades them; the page polls until they are in.
    sign_in(page, base, "alice-author")
    page.goto(f"{base}/tasks/{env_task.pk}/?tab=verifier")
    probes = page.locator("#q-probes")
    expect(probes.locator("#q-probe-status")).to_have_text("Not probed yet")
    probes.get_by_role("button", name="Run the probes").click()
    expect(page.locator("#q-probe-status")).to_have_text("1 probe flagged", timeout=GRADING_TIMEOUT_MS)
    expect(page.locator("#q-probe-summary")).to_contain_text("1 flagged")

    # 2. The flagged near miss: the criterion it fooled, why, and the fix.
    flagged = page.locator("#q-probe-results tr.q-flagged")
    expect(flagged).to_have_count(1)
    expect(flagged).to_contain_text("Near miss: $48.5 million → $53.4 million")
    expect(flagged).to_contain_text("States the purchase price")
    fix = page.locator("#q-probe-results tr.q-fix-row")
    expect(fix).to_contain_text("The near miss said $53.4 million where the reference answer says $48.5 million")
    expect(fix).to_contain_text("States the purchase price: $48.5 million, given as the answer")
    expect(fix).to_contain_text("Gives $53.4 million as the purchase price (the reference answer gives $48.5 million)")
    expect(page.locator("#q-probe-results tr", has_text="A refusal")).not_to_have_class("q-flagged")
    fix.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "45-probes-flagged.png", full_page=True)

    # 3. Take the suggested wording: the probes froze version 1, so it is version 2; the panel knows the run is stale.
    fix.get_by_role("button", name="Use the suggested wording for criterion: States the purchase price").click()
    expect(page.locator("#rubric h2")).to_contain_text("version 2")
    expect(page.locator("#rubric")).to_contain_text("States the purchase price: $48.5 million, given as the answer")
    expect(page.locator("#q-probes")).to_contain_text("The rubric has changed since this run")

    # 4. Run again: nothing is flagged.
    page.locator("#q-probes").get_by_role("button", name="Run the probes").click()
    expect(page.locator("#q-probe-status")).to_have_text("No probe flagged", timeout=GRADING_TIMEOUT_MS)
    expect(page.locator("#q-probe-summary")).to_contain_text("none flagged")
    expect(page.locator("#q-probe-results tr.q-flagged")).to_have_count(0)
    page.locator("#q-probes").scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "46-probes-clear.png", full_page=True)
    assert console_log.errors == []
