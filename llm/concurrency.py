"""A cap on calls in flight per endpoint, shared by every process that calls models.

With Redis configured the slots are leases in a sorted set, each LEASE_SECONDS long and
renewed every LEASE_SECONDS / 4 by a thread of the process that holds it, for as long as its
call runs: a process that dies (a SIGKILLed worker) stops renewing, and its slots come free
within LEASE_SECONDS, not after the longest call it might have been making. Without Redis
they are fcntl locks on slot files under var/ (released by the kernel when a process dies),
which covers every process on one machine.

A process keeps a Redis slot its call has finished with for up to HOLD_SECONDS (from the
start of the slot's lease) and hands it to its own next call, so a worker making hundreds
of calls a second goes to Redis about once per slot per HOLD_SECONDS, not twice per call:
each round trip makes the calling thread wait for the interpreter lock again behind
dozens of others, and in a busy worker those waits cost more than Redis itself. The price:
on a saturated endpoint a process that holds slots keeps each for HOLD_SECONDS at a time,
so other processes get turns less often (each slot comes free at least that often); an
idle process gives its slots back within HOLD_SECONDS of their last use, and an exiting
one at once. A kept slot is renewed like one in use.
"""

import atexit
import contextlib
import fcntl
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from llm.errors import ModelError

logger = logging.getLogger(__name__)

HOLD_SECONDS = 2.0
# A slot's lease in Redis; the holding process renews it every quarter of this, so a renewal
# delayed by a busy machine still lands in time, and a dead process's slots are free again
# within this many seconds.
LEASE_SECONDS = 10.0
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

        # A hung Redis must not hang every model call: its waits are 0.25 s long (BLPOP).
        client = redis.Redis.from_url(settings.LLM_SLOTS_REDIS_URL, socket_timeout=10, socket_connect_timeout=10)
        # One round trip each way: a script is sent by its hash (EVALSHA).
        _scripts.update(acquire=client.register_script(_ACQUIRE), release=client.register_script(_RELEASE))
        _redis_client = client
    return _redis_client


@contextlib.contextmanager
def endpoint_slot(*, endpoint_id: int, cap: int, lease_seconds: float | None = None, wait_seconds: float = 600.0) -> Iterator[None]:
    """Hold one of `cap` slots of the endpoint while the block runs, however long it runs
    (the lease, LEASE_SECONDS unless `lease_seconds` says otherwise, is renewed meanwhile)."""
    cap = max(1, cap)
    if settings.LLM_SLOTS_REDIS_URL:
        with _redis_slot(endpoint_id, cap, lease_seconds or LEASE_SECONDS, wait_seconds):
            yield
    else:
        with _file_slot(endpoint_id, cap, wait_seconds):
            yield


class _Kept:
    """This process's Redis slots of one endpoint: `free` ones (token, when its lease
    began) wait for the process's next call; `busy` holds the others' tokens. The lock is
    never held across a Redis round trip."""

    def __init__(self, key: str) -> None:
        self.key, self.wake, self.cap = key, f"{key}:released", 1
        self.changed = threading.Condition(threading.Lock())  # (never re-entered: a plain lock is cheaper than the default RLock)
        self.free: list[tuple[str, float]] = []
        self.busy: set[str] = set()
        self.reaper: threading.Timer | None = None

    @property
    def in_use(self) -> int:
        return len(self.busy)

    def held(self) -> list[str]:
        """Every slot this process holds, in use or kept: the ones whose leases to renew."""
        with self.changed:
            return [*self.busy, *(token for token, _ in self.free)]

    def take(self) -> tuple[str, float] | None:
        """The kept slot given back last, if young enough to use, or None (old ones go back to Redis)."""
        with self.changed:
            old = self._expire()
            slot = self.free.pop() if self.free else None
            if slot is not None:
                self.busy.add(slot[0])
        self._release(old)
        return slot

    def acquired(self, token: str) -> tuple[str, float]:
        with self.changed:
            self.busy.add(token)
        _renewer.ensure_running()
        return token, time.monotonic()

    def give_back(self, token: str, since: float) -> None:
        young = time.monotonic() - since < HOLD_SECONDS
        with self.changed:
            self.busy.discard(token)
            if young:
                self.free.append((token, since))
                self._schedule_reaper()
            self.changed.notify()  # a thread of this process waiting for a slot takes this one, or tries Redis again
        if not young:
            self._release([token])

    def wait_for_own(self) -> bool:
        """If this process's own calls hold slots, wait (briefly) for one of them to end."""
        with self.changed:
            if not self.busy:
                return False
            if not self.free:  # (one given back since this thread looked takes no waiting)
                self.changed.wait(timeout=0.25)
            return True

    def _expire(self) -> list[str]:
        now = time.monotonic()
        old = [token for token, since in self.free if now - since >= HOLD_SECONDS]
        if old:
            self.free = [(token, since) for token, since in self.free if now - since < HOLD_SECONDS]
        return old

    def _schedule_reaper(self) -> None:
        if self.reaper is None and self.free:
            oldest = min(since for _, since in self.free)
            self.reaper = threading.Timer(max(0.01, oldest + HOLD_SECONDS - time.monotonic()), self._reap)
            self.reaper.daemon = True
            try:
                self.reaper.start()
            except RuntimeError:  # the interpreter is shutting down: the exit hook gives the slots back
                self.reaper = None

    def _reap(self) -> None:
        """Give back the kept slots no call took in time (an idle process's)."""
        with self.changed:
            self.reaper = None
            old = self._expire()
            self._schedule_reaper()
        self._release(old)

    def _release(self, tokens: list[str]) -> None:
        """Hand slots back to Redis. Never raises: it runs after a call that has its answer
        (and in the reaper), and a lease Redis did not take back runs out on its own."""
        for token in tokens:
            try:
                _scripts["release"](keys=[self.key, self.wake], args=[token, self.cap])
            except Exception as error:  # any Redis failure: the lease expires by itself
                logger.warning("could not give an endpoint slot back to Redis (%s); its lease runs out on its own", error)


_kept: dict[str, _Kept] = {}
_kept_lock = threading.Lock()


class _Renewer:
    """One thread per process renewing the leases of the slots it holds, every
    LEASE_SECONDS / 4, started with the first slot taken (after a fork too)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def ensure_running(self) -> None:
        if self.thread is not None and self.thread.is_alive():
            return
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="llm-slot-leases", daemon=True)
                self.thread.start()

    def renew(self) -> None:
        for kept in list(_kept.values()):
            tokens = kept.held()
            if not tokens:
                continue
            try:
                client = _redis()
                with client.pipeline(transaction=False) as pipe:
                    pipe.zadd(kept.key, dict.fromkeys(tokens, time.time() + LEASE_SECONDS), xx=True)
                    pipe.pexpire(kept.key, int(LEASE_SECONDS * 2000))
                    pipe.execute()
            except Exception as error:  # Redis away: the next renewal tries again
                logger.warning("could not renew this process's endpoint slots in Redis (%s)", error)

    def _run(self) -> None:
        while True:
            time.sleep(LEASE_SECONDS / 4)
            try:
                self.renew()
            except Exception:  # (the thread must outlive any one renewal)
                logger.exception("renewing endpoint slots failed")


_renewer = _Renewer()


def _forget_in_child() -> None:
    """A forked child (a prefork pool's) must not use its parent's slots (the parent gives
    them back), nor a lock some parent thread held at the fork."""
    global _kept_lock, _renewer
    _kept.clear()
    _kept_lock = threading.Lock()
    _renewer = _Renewer()


os.register_at_fork(after_in_child=_forget_in_child)


@atexit.register
def _give_back_all() -> None:
    """A process that exits (a worker's warm shutdown ends here) gives back the slots it kept:
    left in Redis they would count against the cap until their leases ran out."""
    for kept in list(_kept.values()):
        with kept.changed:
            tokens, kept.free = [token for token, _ in kept.free], []
        kept._release(tokens)


def _kept_for(endpoint_id: int, cap: int) -> _Kept:
    key = f"taskwright:llm-slots:{endpoint_id}"
    with _kept_lock:
        kept = _kept.get(key)
        if kept is None:
            kept = _kept[key] = _Kept(key)
        kept.cap = cap
        return kept


@contextlib.contextmanager
def _redis_slot(endpoint_id: int, cap: int, lease_seconds: float, wait_seconds: float) -> Iterator[None]:
    client = _redis()
    kept = _kept_for(endpoint_id, cap)
    deadline = time.monotonic() + wait_seconds
    unreachable = 0
    while (slot := kept.take()) is None:
        token, now = uuid.uuid4().hex, time.time()
        try:
            if _scripts["acquire"](keys=[kept.key], args=[now, cap, now + lease_seconds, token, int(lease_seconds * 2000)]):
                slot = kept.acquired(token)
                break
            if time.monotonic() > deadline:
                raise ModelError("Timed out waiting for a free slot on this model endpoint.", kind="timeout")
            if not kept.wait_for_own():  # sleep until some process releases a slot (or briefly, in case a lease expired)
                client.blpop([kept.wake], timeout=0.25)
        except (RedisConnectionError, RedisTimeoutError) as error:
            # Redis restarting (loading included) or briefly unreachable: wait for it, within the
            # same deadline (a restart that lost the leases only lets this many more calls through
            # once). Any other Redis error is a fault to report, not to wait out.
            if time.monotonic() > deadline:
                raise ModelError(f"Could not reach Redis for a slot on this model endpoint ({error}).", kind="timeout") from error
            if not unreachable:
                logger.warning("Redis is unreachable for endpoint slots (%s); waiting for it", error)
            unreachable += 1
            time.sleep(min(0.1 * 2**unreachable, 2.0))
    try:
        yield
    finally:
        kept.give_back(*slot)


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
