"""Claiming a background job: a row with a status, an attempts counter, `started_at` and
`delivery` (the Celery task id of the message that last took it), run by a Celery task with
`acks_late` and `reject_on_worker_lost`, so its message comes back when the worker running
it dies (the broker redelivers it only then, or once the visibility timeout, set above
every task's time limit, has passed).

`claim_job` takes the job for this delivery by one conditional UPDATE:

- a queued job;
- a running one, when this is the message that took it coming back (its worker died: the
  broker redelivers a message only then, or after the visibility timeout), or when it
  started longer ago than the task's hard time limit, while it has attempts left. Under the
  prefork pool the limit kills a run that long; the thread pool does not enforce Celery's
  limits, so there a run past its limit can be taken over while it still runs (a heartbeat,
  as rollouts have, would close that).

A second message for a job that is running (a recovery sent one more for a job that was
only waiting in a long queue, say) leaves it alone, so a job never runs twice at once. A
job out of attempts is failed with a reason the user can read, so a job whose worker keeps
dying still ends.

Rollouts claim with a heartbeat instead (a running one is taken over only when its
heartbeat is stale: `rollouts.agent`), because a rollout runs for many minutes.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import models
from django.db.models import F, Q
from django.utils import timezone


@dataclass(frozen=True)
class JobStates:
    """A job model's status values, and the field that records when a job ended."""

    queued: str
    running: str
    failed: str
    ended_at: str = "finished_at"


def claim_job(
    model: type[models.Model], pk: int, *, states: JobStates, max_attempts: int, gave_up: str, delivery: str | None,
    stale_before: datetime, **values,
) -> bool:
    """Take job `pk` for the message `delivery` (None: a call outside a worker, never a
    redelivery), setting `values` too; False if it is not this delivery's to run (another
    one holds it, or it has ended) or it just ran out of attempts (then it is failed with
    `gave_up` as its error)."""
    its_own = Q(delivery=delivery) if delivery else Q(pk__in=[])
    running = Q(status=states.running) & (its_own | Q(started_at__lt=stale_before))
    now = timezone.now()
    taken = model.objects.filter(Q(status=states.queued) | (running & Q(attempts__lt=max_attempts)), pk=pk).update(
        status=states.running, attempts=F("attempts") + 1, started_at=now, delivery=delivery or "", **values
    )
    if not taken:
        model.objects.filter(running, pk=pk, attempts__gte=max_attempts).update(status=states.failed, error=gave_up, **{states.ended_at: now})
    return bool(taken)
