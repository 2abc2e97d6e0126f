"""A rollout whose thread hangs (Celery's thread pool enforces no time limit) is ended by its
deadline, checked by the worker's heartbeat thread, not left running for ever; the hung
thread, once it returns, changes nothing of that end."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models.functions import Now

from core import jobs
from rollouts import agent, services
from rollouts.models import Rollout, RolloutStatus
from tests import factories
from tests.fake_llm import Reply
from tests.rollouts.test_worker_rollouts import wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # the pulse thread has its own connection: it must see the rows


@pytest.fixture
def pulse(settings, monkeypatch):
    settings.JOB_STALE_SECONDS = 0.6  # a beat every 0.1 s
    fresh = jobs._Pulse()
    fresh.enabled = True
    monkeypatch.setattr(jobs, "_pulse", fresh)
    yield fresh
    fresh.stop()


def test_a_rollout_hung_past_its_time_limit_is_ended_by_the_heartbeats_deadline(team, world, endpoint, fake_llm, pulse, monkeypatch):
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)  # (no worker: run here)
    monkeypatch.setattr(agent, "TASK_TIME_MARGIN", 0)  # the deadline is the time limit itself, for a short test
    batch = services.rollout_batch_start(env_task=factories.env_task(world, team.author), user=team.author, endpoint=endpoint, n=1,
                                         time_limit_seconds=10)
    rollout = batch.rollouts.get()
    # It started 9.7 s ago: the loop's own check passes, then its model call "hangs" past the limit.
    Rollout.objects.filter(pk=rollout.pk).update(started_at=Now() - timedelta(seconds=9.7))
    fake_llm.responder = lambda request: Reply(content="Late answer.", delay=1.2)

    ended_during_the_call = []

    def watch() -> bool:
        row = Rollout.objects.get(pk=rollout.pk)
        if row.status == RolloutStatus.FAILED and fake_llm.in_flight:
            ended_during_the_call.append(row.reason)
        return bool(ended_during_the_call)

    def worker_thread() -> None:
        try:
            agent.rollout_execute(rollout_id=rollout.pk)
        finally:
            connection.close()  # (this thread's own)

    run = threading.Thread(target=worker_thread)
    run.start()
    try:
        wait_until(watch, timeout=5, what="the deadline ends the rollout while its call hangs", poll=0.05)
    finally:
        run.join(timeout=10)
    rollout.refresh_from_db()
    assert (rollout.status, rollout.reason) == (RolloutStatus.FAILED, "Stopped at the time limit of 10 s (its run hung).")
    assert rollout.final_answer == "" and rollout.finished_at is not None  # the late answer changed nothing
