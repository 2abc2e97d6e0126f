"""core.broker: a worker notices that its Redis broker lost its data, once per loss, and
only one of several workers acts on it."""

import threading

import redis

from core.broker import MARK, BrokerWatch, mark_was_missing
from tests.redis_server import own_redis  # noqa: F401
from tests.rollouts.test_worker_rollouts import wait_until


def watch(url: str, losses: list) -> BrokerWatch:
    watcher = BrokerWatch(url, 0.05, lambda: losses.append(1))
    mark_was_missing(watcher.client)  # as a worker does when it starts
    watcher.start()
    return watcher


def test_each_loss_of_the_brokers_data_is_acted_on_once_by_one_worker(own_redis):  # noqa: F811 (fixture)
    firsts: list[int] = []
    seconds: list[int] = []
    first, second = watch(own_redis.url, firsts), watch(own_redis.url, seconds)
    client = redis.Redis.from_url(own_redis.url)

    def losses() -> int:
        return len(firsts) + len(seconds)

    try:
        assert client.exists(MARK)
        threading.Event().wait(0.3)
        assert losses() == 0  # nothing lost yet

        client.flushdb()  # flushed
        wait_until(lambda: losses() == 1, timeout=5, what="the flush is noticed")
        threading.Event().wait(0.3)
        assert sorted([len(firsts), len(seconds)]) == [0, 1]  # once, by one of the two

        own_redis.stop()  # down for a while: the watches only wait
        threading.Event().wait(0.3)
        assert losses() == 1 and first.is_alive() and second.is_alive()
        own_redis.start()  # back, empty
        wait_until(lambda: losses() == 2, timeout=5, what="the restart is noticed")
        threading.Event().wait(0.3)
        assert losses() == 2
    finally:
        for watcher in (first, second):
            watcher.stopped.set()
            watcher.join(timeout=5)


def test_a_recovery_that_failed_is_tried_again_until_it_succeeds(own_redis):  # noqa: F811 (fixture)
    calls: list[int] = []

    def recover() -> None:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("the database is down too")

    watcher = BrokerWatch(own_redis.url, 0.05, recover)
    watcher.start()  # (no mark yet: a loss)
    client = redis.Redis.from_url(own_redis.url)
    try:
        wait_until(lambda: len(calls) == 3, timeout=5, what="the recovery succeeds at the third try")
        threading.Event().wait(0.3)
        assert len(calls) == 3 and client.exists(MARK) and watcher.is_alive()
    finally:
        watcher.stopped.set()
        watcher.join(timeout=5)


def test_lost_queue_bindings_are_declared_again(settings):
    """A Redis that lost its data lost kombu's bindings: a message sent to a queue without
    one is dropped, so the recovery declares every queue before it sends."""
    import pytest

    from config.celery import _declare_queues, app

    if not settings.CELERY_BROKER_URL.startswith("redis"):
        pytest.skip("needs the Redis broker (.ci/run uses it)")
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for key in client.scan_iter("_kombu.binding.*"):
        client.delete(key)
    _declare_queues()
    queues = {queue.name for queue in app.amqp.queues.values()}
    bound = {member.decode().split("\x06\x16")[-1] for key in client.scan_iter("_kombu.binding.*") for member in client.smembers(key)}
    assert queues <= bound, (queues, bound)


def test_a_worker_start_recovers_every_kind_of_job_and_watches_the_broker():
    import importlib

    from celery.signals import worker_ready

    from config.celery import RECOVERIES, _recover_jobs

    assert _recover_jobs in [receiver() for _, receiver in worker_ready.receivers]
    functions = [getattr(importlib.import_module(path.rsplit(".", 1)[0]), path.rsplit(".", 1)[1]) for path in RECOVERIES]
    assert {f.__name__ for f in functions} == {"draft_jobs_recover", "skeleton_proposals_recover", "packs_recover", "rollouts_recover",
                                                 "grades_recover", "probe_runs_recover"}
