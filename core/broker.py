"""Noticing that a Redis broker lost its data.

A Redis that restarts without persistence (as on the development machine; a cache-configured
Redis anywhere) forgets every message it held: the jobs the database says are queued
would wait until some worker restarted. So a worker sets a mark key in the broker's
database as it starts, and looks for it every `BROKER_WATCH_SECONDS`; a missing mark means
the broker lost its data (restarted, flushed, or evicted the key under memory pressure),
and the worker that sets it again sends every queued job once more (`on_loss`; if that fails,
the mark is removed again, so the next look tries again). Setting it is one `SET NX`, so of
several workers only one does. The claims (core.jobs, and the rollouts' heartbeat) make a
message too many harmless (for skeleton proposals, it may cost one more model call).
"""

import contextlib
import logging
import threading
import time
from collections.abc import Callable

import redis

logger = logging.getLogger(__name__)
MARK = "taskwright:broker-mark"


def is_redis(url: str) -> bool:
    return url.startswith(("redis://", "rediss://"))


def mark_was_missing(client: redis.Redis) -> bool:
    """Set the mark; True if it was not there."""
    return bool(client.set(MARK, str(time.time()), nx=True))


class BrokerWatch(threading.Thread):
    """Every `seconds`, calls `on_loss` when the broker's mark is gone. A broker that is
    down is only looked at again next time (Celery reconnects on its own)."""

    def __init__(self, url: str, seconds: float, on_loss: Callable[[], object]) -> None:
        super().__init__(name="broker-watch", daemon=True)
        self.client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self.seconds = seconds
        self.on_loss = on_loss
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.seconds):
            try:
                lost = mark_was_missing(self.client)
            except redis.RedisError:
                continue
            if lost:
                logger.warning("The broker lost its data (a restart without persistence?): sending the queued jobs again.")
                try:
                    self.on_loss()
                except Exception:
                    logger.exception("Sending the queued jobs again failed; trying again in %s s.", self.seconds)
                    with contextlib.suppress(redis.RedisError):
                        self.client.delete(MARK)  # so that this worker (or another) tries again


class MessageLease(threading.Thread):
    """Keeps young, in Redis, the messages this worker holds unacknowledged.

    kombu's Redis transport keeps each message a worker took (acks_late: until its job ends;
    prefetched ones too) in its `unacked` hash, scored in `unacked_index` by when it was
    taken, and any worker hands it out again once that is older than the visibility timeout.
    Every `seconds`, this sets the score of every message the worker still holds to now
    (`ZADD XX`: one acknowledged meanwhile is not brought back). So a job that runs longer
    than the visibility timeout is never handed out twice, and the messages of a worker that
    died, prefetched ones included, come back one visibility timeout after its last renewal
    (not the hours a timeout above the longest job would take)."""

    def __init__(self, url: str, seconds: float, index_key: str, held: Callable[[], list[str]]) -> None:
        super().__init__(name="message-lease", daemon=True)
        self.client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self.seconds = seconds
        self.index_key = index_key
        self.held = held
        self.stopped = threading.Event()

    def renew(self) -> int:
        tags = self.held()
        if not tags:
            return 0
        now = time.time()
        return self.client.zadd(self.index_key, dict.fromkeys(tags, now), xx=True, ch=True)

    def run(self) -> None:
        while not self.stopped.wait(self.seconds):
            try:
                self.renew()
            except Exception:  # (Redis away: the next renewal tries again; the thread must outlive it)
                logger.warning("Could not renew this worker's messages in the broker.", exc_info=True)


def held_delivery_tags() -> list[str]:
    """The delivery tags of the messages this worker process holds: running, waiting for a
    thread, or waiting for their countdown (celery.worker.state.requests)."""
    from celery.worker import state

    for _ in range(5):  # (the consumer changes the dict while it is copied)
        try:
            requests = list(state.requests.values())
            break
        except RuntimeError:
            continue
    else:
        return []
    tags = []
    for request in requests:
        tag = getattr(getattr(request, "message", None), "delivery_tag", None)
        if tag:
            tags.append(tag)
    return tags
