"""core.broker: a worker notices that its Redis broker lost its data, once per loss, and
only one of several workers acts on it."""

import threading

import redis

from core.broker import MARK, BrokerWatch, mark_was_missing
from tests.redis_server import own_redis  # noqa: F401
from tests.rollouts.test_worker_rollouts import wait_until


def watch(url: str, losses: list) -> BrokerWatch:
    watcher = BrokerWatch(url, 0.05, lambda: losses.append(threading.current_thread().name))
    mark_was_missing(watcher.client)  # as a worker does when it starts
    watcher.start()
    return watcher


def test_each_loss_of_the_brokers_data_is_acted_on_once_by_one_worker(own_redis):  # noqa: F811 (fixture)
    losses: list[str] = []
    first, second = watch(own_redis.url, losses), watch(own_redis.url, losses)
    client = redis.Redis.from_url(own_redis.url)
    try:
        assert client.exists(MARK)
        threading.Event().wait(0.3)
        assert losses == []  # nothing lost yet

        client.flushdb()  # flushed
        wait_until(lambda: len(losses) == 1, timeout=5, what="the flush is noticed")
        threading.Event().wait(0.3)
        assert losses == ["broker-watch"]  # once, by one of the two

        own_redis.stop()  # down for a while: the watches only wait
        threading.Event().wait(0.3)
        assert len(losses) == 1 and first.is_alive() and second.is_alive()
        own_redis.start()  # back, empty
        wait_until(lambda: len(losses) == 2, timeout=5, what="the restart is noticed")
        threading.Event().wait(0.3)
        assert len(losses) == 2
    finally:
        for watcher in (first, second):
            watcher.stopped.set()
            watcher.join(timeout=5)


def test_a_failing_recovery_does_not_stop_the_watch(own_redis):  # noqa: F811 (fixture)
    calls: list[int] = []

    def recover() -> None:
        calls.append(1)
        raise RuntimeError("the database is down too")

    watcher = BrokerWatch(own_redis.url, 0.05, recover)
    watcher.start()
    client = redis.Redis.from_url(own_redis.url)
    try:
        wait_until(lambda: len(calls) == 1, timeout=5, what="the missing mark is noticed")
        client.delete(MARK)
        wait_until(lambda: len(calls) == 2, timeout=5, what="the next loss is noticed")
        assert watcher.is_alive()
    finally:
        watcher.stopped.set()
        watcher.join(timeout=5)
