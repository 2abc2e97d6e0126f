"""Claiming a background job, and keeping it alive while it runs.

A job is a row with a status, an attempts counter, `started_at` and `heartbeat_at`, run by a
Celery task with `acks_late` and `reject_on_worker_lost`, so its message comes back when the
worker running it dies.

`claim_job` takes the job for this delivery by one conditional UPDATE: a queued job, or a
running one whose heartbeat is older than `JOB_STALE_SECONDS` (its worker died), while it
has attempts left. Two deliveries never both take it, and a second message for a job that
is still running (a recovery sent one more for a job that was only waiting in a long queue)
leaves it alone. A job out of attempts is failed
with a reason the user can read, so a job whose worker keeps dying still ends. Only attempts
that ran count: a take-over of a job whose last worker died before it first beat the job's
heartbeat (killed right after its claim) reuses that attempt's number.

`kept_alive` beats a job's heartbeat while the block runs: one thread per worker process
updates every job the process is running, every sixth of `JOB_STALE_SECONDS`, in one
statement per kind of job. That holds on every pool, whatever a job waits on (Celery's
thread pool does not enforce time limits, so a time limit cannot tell a dead run from a
slow one). The thread runs in worker processes only (`enable_pulse`, at worker start);
elsewhere (eager tasks, a shell, tests) the block runs without beats.

A job can carry a deadline (`kept_alive(..., deadline=...)`): the same beat ends a job still
running that long after its claim (`started_at`) as failed, with a reason. Celery's thread
pool enforces no time limit, so a run that hangs (a call that never returns) would otherwise
hold its job running for ever; its thread is left to finish or hang, and anything it writes
later is conditioned on the job still running.

Every time these write or compare (claims, beats, staleness, deadlines) is the database's
clock (`Now()`), never the host's: workers on several hosts with skewed clocks must agree on
which heartbeat is stale.

Rollouts beat their own heartbeat between model calls, with the cancel check
(`rollouts.agent`).
"""

import contextlib
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, connections, models
from django.db.models import Case, F, Q, When
from django.db.models.functions import Now

logger = logging.getLogger(__name__)
# A job is stale after this many missed beats (a beat may wait out SQLite's 20 s lock timeout).
BEATS_PER_STALE = 6


@dataclass(frozen=True)
class JobStates:
    """A job model's status values, the field that records when a job ended, and the one
    that says why it failed."""

    queued: str
    running: str
    failed: str
    ended_at: str = "finished_at"
    error: str = "error"


def stale(states: JobStates) -> Q:
    """Running jobs whose worker gave no sign of life for JOB_STALE_SECONDS (or that a
    failed run left without a heartbeat), by the database's clock."""
    return Q(status=states.running) & (
        Q(heartbeat_at__lt=Now() - timedelta(seconds=settings.JOB_STALE_SECONDS)) | Q(heartbeat_at__isnull=True)
    )


def claim_job(model: type[models.Model], pk: int, *, states: JobStates, max_attempts: int, gave_up: str, **values) -> bool:
    """Take job `pk` (setting `values` too); False if it is not this delivery's to run
    (another one is running it, or it has ended) or it just ran out of attempts (then it is
    failed with `gave_up` as its error)."""
    now = Now()  # (one statement's Now() is one instant: started_at == heartbeat_at after a claim)
    dead = stale(states)
    # Only attempts that ran count: one whose worker died before its first beat (killed just
    # after the claim, as a worker that keeps being restarted is) did no work, and the
    # take-over reuses its number instead of using up another.
    wasted = dead & ~ran()
    taken = model.objects.filter(Q(status=states.queued) | (dead & Q(attempts__lt=max_attempts)) | wasted, pk=pk).update(
        status=states.running, attempts=Case(When(wasted, then=F("attempts")), default=F("attempts") + 1),
        started_at=now, heartbeat_at=now, **values,
    )
    if not taken:
        model.objects.filter(dead & ran(), pk=pk, attempts__gte=max_attempts).update(
            status=states.failed, **{states.error: gave_up, states.ended_at: now}
        )
    return bool(taken)


def ran() -> Q:
    """The job's current (or last) attempt ran: its worker beat its heartbeat at least once
    after the claim (claim_job sets both to the same instant)."""
    return Q(started_at__isnull=True) | Q(heartbeat_at__gt=F("started_at"))


@dataclass(frozen=True)
class Deadline:
    """How long after its claim a running job is ended, and the reason it is given."""

    after: timedelta
    reason: str


class _Pulse:
    """The jobs this process is running, by model and states, with their deadlines, and the
    thread that beats their heartbeats and ends the ones past their deadline."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: dict[tuple[type[models.Model], JobStates], Counter] = {}
        self.deadlines: dict[tuple[type[models.Model], JobStates], dict[int, Deadline]] = {}
        self.enabled = False
        self.thread: threading.Thread | None = None
        self.stopped = threading.Event()

    def add(self, model: type[models.Model], states: JobStates, pk: int, deadline: Deadline | None = None) -> None:
        with self.lock:
            self.jobs.setdefault((model, states), Counter())[pk] += 1
            if deadline is not None:
                self.deadlines.setdefault((model, states), {})[pk] = deadline
            if self.enabled and (self.thread is None or not self.thread.is_alive()):
                # (started here, not at enable: a prefork pool's children are forked after it)
                self.thread = threading.Thread(target=self._run, name="job-pulse", daemon=True)
                self.thread.start()

    def remove(self, model: type[models.Model], states: JobStates, pk: int) -> None:
        with self.lock:
            counts = self.jobs[(model, states)]
            counts[pk] -= 1
            if counts[pk] <= 0:
                del counts[pk]
                self.deadlines.get((model, states), {}).pop(pk, None)

    def beat(self) -> None:
        """One beat: end the jobs of this process past their deadline, then beat the others'
        heartbeats, one UPDATE per kind of job (and per distinct deadline)."""
        with self.lock:
            due = {key: list(counts) for key, counts in self.jobs.items() if counts}
            deadlines = {key: dict(self.deadlines.get(key, {})) for key in due}
        if not due:
            return
        close_old_connections()  # (a connection the database dropped since the last beat is replaced)
        for (model, states), pks in due.items():
            try:
                by_deadline: dict[Deadline, list[int]] = {}
                for pk, deadline in deadlines[(model, states)].items():
                    by_deadline.setdefault(deadline, []).append(pk)
                for deadline, late in by_deadline.items():
                    model.objects.filter(pk__in=late, status=states.running, started_at__lt=Now() - deadline.after).update(
                        status=states.failed, **{states.error: deadline.reason, states.ended_at: Now()}
                    )
                model.objects.filter(pk__in=pks, status=states.running).update(heartbeat_at=Now())
            except Exception:  # the next beat tries again; a job missing enough beats is taken over
                logger.exception("Could not beat the heartbeat of %s %s", model.__name__, pks)

    def _run(self) -> None:
        try:
            while not self.stopped.wait(settings.JOB_STALE_SECONDS / BEATS_PER_STALE):
                try:
                    self.beat()
                except Exception:  # the thread must outlive any one beat: the jobs depend on it
                    logger.exception("A heartbeat beat failed")
        finally:
            connections.close_all()  # (this thread's own)

    def stop(self) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join(timeout=10)


_pulse = _Pulse()


def enable_pulse() -> None:
    """In a worker process: beat the heartbeats of the jobs it runs."""
    _pulse.enabled = True


@contextlib.contextmanager
def kept_alive(
    model: type[models.Model], pk: int, *, states: JobStates, release_on_error: bool = True, deadline: Deadline | None = None
) -> Iterator[None]:
    """While the block runs, the job's heartbeat is kept fresh (in worker processes). If the
    block raises with the job still running (the task will be retried: a database that
    went away, say), the heartbeat is cleared, so the next message may take the job at once
    (claim_job does not count such an attempt: it ended by an error the task retries a
    bounded number of times, not by a worker dying on it). `release_on_error=False`: a caller
    that ends the job itself whatever it raises (a rollout), whose heartbeat must stay.
    `deadline`: the job is failed with its reason once it is still running that long after
    its claim, whatever its thread is doing."""
    _pulse.add(model, states, pk, deadline)
    try:
        yield
    except BaseException:
        if release_on_error:
            with contextlib.suppress(Exception):
                model.objects.filter(pk=pk, status=states.running).update(heartbeat_at=None)
        raise
    finally:
        _pulse.remove(model, states, pk)
