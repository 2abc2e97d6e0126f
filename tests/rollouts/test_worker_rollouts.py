"""Trial rollouts on a real Celery worker, on the real broker and the test database.

The fake model server runs in this process; the worker subprocess calls it over loopback.
The endpoint has no api_key_env, so the worker needs no secret in its environment. The
task has no rubric criteria, so nothing is queued for grading: the model's only caller
is the agent loop.
"""

import hashlib
import os
import signal
import time
from collections.abc import Callable

import pytest
from django.conf import settings

from authoring import services as authoring_services
from llm.models import CallPurpose, ModelCall, ModelEndpoint
from rollouts import selectors, services
from rollouts.models import Rollout, RolloutBatch, RolloutStatus, Step, StepKind
from rollouts.tasks import run_rollout
from tests import factories
from tests.fake_llm import Reply
from tests.worker import start_worker, stop_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

RUN_TIMEOUT = 60.0
# On Redis an unacknowledged message comes back after the visibility timeout (90 s in
# production, renewed while its worker lives). The SIGKILL test shortens it for its workers,
# short enough to wait for.
SHORT_VISIBILITY_TIMEOUT = 12
KILL_TEST_LATENCY = 1.5
PRICE_TEXT = "The purchase price is $12m, payable at closing."


@pytest.fixture
def task(team, world):
    for document in world.documents.all():
        authoring_services.document_update(
            document=document, user=team.author, base_revision=document.revision, content=f"{document.path}: {PRICE_TEXT}"
        )
    return factories.env_task(world, team.author, criteria=0)


def make_endpoint(fake_llm) -> ModelEndpoint:
    return ModelEndpoint.objects.create(
        name="fake", kind="openai_compatible", base_url=fake_llm.url, model="fake-model", api_key_env="",
        max_concurrency=8, connect_timeout=2, read_timeout=10, max_retries=1,
        price_input_per_mtok="1.00", price_output_per_mtok="2.00",
    )


def tool_results(request) -> list[str]:
    return [str(m.get("content", "")) for m in request.body.get("messages", []) if m.get("role") == "tool"]


def final_answer(results: list[str]) -> str:
    # Depends on every tool result the model was sent, in order: a resumed rollout whose
    # conversation lost, doubled or reordered a step would answer differently.
    digest = hashlib.sha256("\x00".join(results).encode()).hexdigest()[:12]
    return f"The purchase price is $12m (from {len(results)} tool results, digest {digest})."


def called_tools(request) -> list[str]:
    return [
        c["function"]["name"] for m in request.body.get("messages", []) if m.get("role") == "assistant" for c in m.get("tool_calls") or []
    ]


def agent_responder(*, delay: float, parallel: bool) -> Callable:
    """A scripted agent: list the files (and search them, in parallel), read one, answer."""

    def respond(request) -> Reply:
        called = called_tools(request)
        if not called:
            calls = [{"name": "list_files", "arguments": {"recursive": True}}]
            if parallel:
                calls.append({"name": "search_files", "arguments": {"query": "purchase price"}})
            return Reply(content="Let me look at the data room.", tool_calls=calls, delay=delay)
        if "read_file" not in called:
            return Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}], delay=delay)
        return Reply(content=final_answer(tool_results(request)), delay=delay)

    return respond


def wait_until(condition: Callable[[], bool], *, timeout: float, what: str, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(poll)
    raise AssertionError(f"Timed out after {timeout:.0f}s waiting until {what}.")


def batch_finished(batch: RolloutBatch) -> bool:
    return selectors.batch_progress(batch=batch)["is_finished"]


def trajectory(rollout: Rollout) -> list[tuple]:
    return [(s.index, s.kind, s.tool_name, bool(s.tool_calls)) for s in rollout.steps.order_by("index")]


def assert_well_formed(rollout: Rollout) -> None:
    """Steps 0..k-1 without a gap or a duplicate, tool results only after the model step
    that asked for them, and at most one final answer, the last step."""
    steps = list(rollout.steps.order_by("index"))
    assert [s.index for s in steps] == list(range(len(steps))), rollout
    finals = [s for s in steps if s.kind == StepKind.MODEL and not s.tool_calls]
    assert len(finals) <= 1, rollout
    if finals:
        assert finals[0] is steps[-1] and rollout.final_answer == finals[0].text
    asked: set[str] = set()
    for step in steps:
        if step.kind == StepKind.MODEL:
            asked = {c["id"] for c in step.tool_calls}
        else:
            assert step.tool_call_id in asked, (rollout, step.index)
            asked.discard(step.tool_call_id)  # each call answered once


def test_a_real_worker_runs_a_batch_of_tool_using_rollouts(team, task, fake_llm, celery_worker_process):
    endpoint = make_endpoint(fake_llm)
    fake_llm.responder = agent_responder(delay=0.1, parallel=True)

    batch = services.rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, n=6)  # queued on commit
    wait_until(lambda: batch_finished(batch), timeout=RUN_TIMEOUT, what="every rollout of the batch has finished")

    rollouts = list(batch.rollouts.order_by("index"))
    assert [(r.status, r.reason, r.attempts) for r in rollouts] == [(RolloutStatus.COMPLETED, "Finished with a final answer.", 1)] * 6
    for rollout in rollouts:
        assert_well_formed(rollout)
        assert trajectory(rollout) == [
            (0, "model", "", True), (1, "tool", "list_files", False), (2, "tool", "search_files", False),
            (3, "model", "", True), (4, "tool", "read_file", False), (5, "model", "", False),
        ]
        steps = list(rollout.steps.order_by("index"))
        # The tools ran in the worker, against the task's world.
        assert '"Deal/Doc 1.md"' in steps[1].text and '"matches": 2' in steps[2].text and PRICE_TEXT in steps[4].text
        assert not any(s.is_error for s in steps)
        assert rollout.final_answer == final_answer([steps[1].text, steps[2].text, steps[4].text])
        assert (rollout.input_tokens, rollout.output_tokens) == (300, 150)  # three model calls of 100 + 50
    assert len({r.overlay_id for r in rollouts}) == 6 and None not in {r.overlay_id for r in rollouts}
    assert len(fake_llm.requests) == 18
    assert ModelCall.objects.filter(purpose=CallPurpose.ROLLOUT, outcome="ok").count() == 18

    # Delivered once more (a duplicate message): a finished rollout is left alone.
    run_rollout(rollouts[0].pk)
    assert rollouts[0].steps.count() == 6 and len(fake_llm.requests) == 18
    assert Rollout.objects.get(pk=rollouts[0].pk).attempts == 1


# --- A worker killed mid-rollout -----------------------------------------------------------------

@pytest.fixture
def short_visibility_timeout(monkeypatch) -> None:
    """Read by config/settings.py in every worker started after this (they copy os.environ)."""
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip(
            "The filesystem broker cannot redeliver a killed worker's jobs: kombu moves a message's file out of the "
            "queue folder when a worker fetches it and keeps it unacknowledged only in that worker's memory. (There, "
            "rollouts_recover re-sends them when a worker starts, once they are past their time limit + 2 minutes.)"
        )
    monkeypatch.setenv("CELERY_VISIBILITY_TIMEOUT", str(SHORT_VISIBILITY_TIMEOUT))
    # The killed worker's rollouts stop beating at once; let the redelivery take them over soon.
    monkeypatch.setenv("ROLLOUT_STALE_SECONDS", "4")


def test_a_worker_killed_mid_rollout_changes_nothing_in_the_outcome(
    short_visibility_timeout, team, task, fake_llm, celery_worker_process, tmp_path
):
    """What it proves, on Redis: the messages of the rollouts the killed worker was running
    come back after the visibility timeout (acks_late; the worker never acknowledged them),
    the next worker claims those RUNNING rollouts again (conditional claim, attempt 2) and
    each resumes from its last saved step: no step is lost or saved twice, no model call
    is repeated except the ones in flight at the kill, and every rollout ends as it does in
    a run without the kill."""
    endpoint = make_endpoint(fake_llm)
    fake_llm.responder = agent_responder(delay=KILL_TEST_LATENCY, parallel=False)
    model_calls = 3  # list_files, read_file, answer
    first = celery_worker_process  # two threads: two rollouts run, two wait in the broker
    workers = []
    try:
        # The run without the kill, on the same worker, with the same script.
        reference = services.rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, n=4)
        wait_until(lambda: batch_finished(reference), timeout=RUN_TIMEOUT, what="the reference batch has finished")
        expected = [(r.status, r.final_answer, trajectory(r)) for r in reference.rollouts.order_by("index")]
        assert [status for status, _, _ in expected] == [RolloutStatus.COMPLETED] * 4

        batch = services.rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, n=4)
        steps = Step.objects.filter(rollout__batch=batch)
        wait_until(lambda: steps.filter(kind=StepKind.TOOL).exists(), timeout=30, what="the first worker has saved steps")
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait(timeout=10)
        time.sleep(0.5)  # a request the worker sent just before it died is recorded by now
        requests_at_kill = len(fake_llm.requests)
        at_kill = {r.pk: (r.status, r.steps.filter(kind=StepKind.MODEL).count()) for r in batch.rollouts.all()}
        interrupted = {pk for pk, (status, _) in at_kill.items() if status == RolloutStatus.RUNNING}
        assert interrupted and all(status in (RolloutStatus.RUNNING, RolloutStatus.QUEUED) for status, _ in at_kill.values())
        assert steps.exists() and not batch_finished(batch)

        workers.append(start_worker(tmp_path))  # without purging: the killed worker's messages must survive
        # Queued rollouts start at once; the killed worker's come back from the broker
        # after the visibility timeout.
        wait_until(lambda: batch_finished(batch), timeout=SHORT_VISIBILITY_TIMEOUT + RUN_TIMEOUT, what="every rollout has finished")
    finally:
        for worker in workers:
            stop_worker(worker)
            print(f"--- log of {worker.nodename} ---\n{worker.log_text()[-10_000:]}")  # shown when the test fails

    rollouts = list(batch.rollouts.order_by("index"))
    for rollout in rollouts:
        assert_well_formed(rollout)
    # The same outcome as without the kill: every rollout completed, with the same
    # trajectory and the same final answer.
    assert [(r.status, r.final_answer, trajectory(r)) for r in rollouts] == expected
    assert interrupted != set(at_kill)  # …and rollouts still queued at the kill ran once, on the new worker
    # Each interrupted rollout was claimed once more and resumed: the model was asked only
    # for the steps that had not been saved (a call in flight at the kill is asked again).
    assert {r.pk: r.attempts for r in rollouts} == {r.pk: 2 if r.pk in interrupted else 1 for r in rollouts}
    assert len(fake_llm.requests) - requests_at_kill == sum(model_calls - saved for _, saved in at_kill.values())
    assert sum(r.input_tokens for r in rollouts) == 4 * model_calls * 100  # the totals count each saved step once
