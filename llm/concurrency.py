"""A cap on calls in flight per endpoint, shared by every process that calls models.

With Redis configured the slots are leases in a sorted set (a dead process's lease
expires); without Redis they are fcntl locks on slot files under var/ (released by the
kernel when a process dies), which covers every process on one machine.
"""

import contextlib
import fcntl
import os
import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from llm.errors import ModelError

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""
# Frees the slot and wakes one waiter (the wake-up list is kept at most `cap` long).
_RELEASE = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], 1)
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
redis.call('EXPIRE', KEYS[2], 60)
"""
_redis_client = None
_scripts = {}


def _redis():
    global _redis_client
    if _redis_client is None:
        import redis

        client = redis.Redis.from_url(settings.LLM_SLOTS_REDIS_URL)
        # One round trip each way: a script is sent by its hash (EVALSHA).
        _scripts.update(acquire=client.register_script(_ACQUIRE), release=client.register_script(_RELEASE))
        _redis_client = client
    return _redis_client


@contextlib.contextmanager
def endpoint_slot(*, endpoint_id: int, cap: int, lease_seconds: float, wait_seconds: float = 600.0) -> Iterator[None]:
    """Hold one of `cap` slots of the endpoint while the block runs."""
    cap = max(1, cap)
    if settings.LLM_SLOTS_REDIS_URL:
        with _redis_slot(endpoint_id, cap, lease_seconds, wait_seconds):
            yield
    else:
        with _file_slot(endpoint_id, cap, wait_seconds):
            yield


@contextlib.contextmanager
def _redis_slot(endpoint_id: int, cap: int, lease_seconds: float, wait_seconds: float) -> Iterator[None]:
    client = _redis()
    key = f"taskwright:llm-slots:{endpoint_id}"
    wake = f"{key}:released"
    token = uuid.uuid4().hex
    acquire = _scripts["acquire"]
    deadline = time.monotonic() + wait_seconds
    while True:
        now = time.time()
        if acquire(keys=[key], args=[now, cap, now + lease_seconds, token, int(lease_seconds * 2000)]):
            break
        if time.monotonic() > deadline:
            raise ModelError("Timed out waiting for a free slot on this model endpoint.", kind="timeout")
        # Sleep until some holder releases a slot (or briefly, in case a lease expired).
        client.blpop([wake], timeout=0.25)
    try:
        yield
    finally:
        _scripts["release"](keys=[key, wake], args=[token, cap])


@contextlib.contextmanager
def _file_slot(endpoint_id: int, cap: int, wait_seconds: float) -> Iterator[None]:
    folder = Path(settings.VAR_DIR) / "llm-slots" / str(endpoint_id)
    folder.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_seconds
    delay = 0.005
    while True:
        # From a random slot: scanning from 0 each time would try every held slot first
        # (with 64 of 72 held, ~64 opens and locks per call instead of ~9).
        first = random.randrange(cap)
        for i in ((first + k) % cap for k in range(cap)):
            fd = os.open(folder / f"{i}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            return
        if time.monotonic() > deadline:
            raise ModelError("Timed out waiting for a free slot on this model endpoint.", kind="timeout")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
