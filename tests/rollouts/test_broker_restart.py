"""A Redis broker that restarts and forgets every message (no persistence, as on this
machine and as a cache-configured Redis in production): the work the database says is
queued still runs, once, and rollouts that were running when it went finish.

The test runs its own redis-server on a free port (tests.redis_server), so the suite's Redis
is never touched.
"""

import pytest

from rollouts import services
from rollouts.models import RolloutStatus
from rollouts.tasks import run_rollout
from tests.fake_llm import Reply
from tests.redis_server import own_redis  # noqa: F401
from tests.rollouts.test_worker_rollouts import RUN_TIMEOUT, assert_well_formed, batch_finished, make_endpoint, task, wait_until  # noqa: F401
from tests.worker import start_worker, stop_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_rollouts_queued_when_redis_lost_its_messages_still_run_once(team, task, fake_llm, own_redis, tmp_path, monkeypatch):  # noqa: F811 (fixtures)
    from kombu import Connection

    def enqueue(rollout_ids):  # to the test's Redis, not the suite's broker
        with Connection(own_redis.url) as connection:
            for rollout_id in rollout_ids:
                run_rollout.apply_async((rollout_id,), connection=connection)

    monkeypatch.setattr(services, "_enqueue", enqueue)
    fake_llm.responder = lambda request: Reply(content="The purchase price is $12m.", delay=1.0)
    endpoint = make_endpoint(fake_llm)
    monkeypatch.setenv("BROKER_WATCH_SECONDS", "1")  # (the worker reads it)
    worker = start_worker(tmp_path, concurrency=2, broker_url=own_redis.url)
    try:
        batch = services.rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, n=6, mode="no_tools", max_steps=3)
        wait_until(lambda: batch.rollouts.filter(status=RolloutStatus.RUNNING).count() == 2, timeout=RUN_TIMEOUT, what="two rollouts run")
        own_redis.stop()  # every queued message is gone
        own_redis.start()
        wait_until(lambda: batch_finished(batch), timeout=RUN_TIMEOUT, what="the batch finishes")
    finally:
        stop_worker(worker)
    log = worker.log_text()
    statuses = sorted(batch.rollouts.values_list("status", flat=True))
    assert statuses == [RolloutStatus.COMPLETED] * 6, log[-5000:]
    for rollout in batch.rollouts.all():
        assert_well_formed(rollout)
        assert rollout.attempts == 1
    assert len(fake_llm.requests) == 6  # each rollout asked the model once: nothing ran twice
    assert "The broker lost its data" in log
