"""Claiming a background job: a row with a status and an attempts counter, run by a Celery
task with `acks_late` and `reject_on_worker_lost`, so its message comes back when the
worker running it dies (and the broker redelivers it only then, or once the visibility
timeout, set above every task's time limit, has passed).

`claim_job` takes the job for this delivery by one conditional UPDATE: a queued job, or a
running one whose earlier worker died, while it has attempts left. Two deliveries never
both take it. A job that is still running and out of attempts is failed with a reason the
user can read, so a job whose worker keeps dying still ends.

Rollouts claim with a heartbeat instead (a running one is taken over only when its
heartbeat is stale: `rollouts.agent`), because a rollout runs for many minutes.
"""

from dataclasses import dataclass

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


def claim_job(model: type[models.Model], pk: int, *, states: JobStates, max_attempts: int, gave_up: str, **values) -> bool:
    """Take job `pk` (setting `values` too: `started_at=…`, say); False if another delivery
    holds it, it has ended, or it just ran out of attempts (then it is failed with `gave_up`
    as its error)."""
    taken = model.objects.filter(Q(status=states.queued) | Q(status=states.running, attempts__lt=max_attempts), pk=pk).update(
        status=states.running, attempts=F("attempts") + 1, **values
    )
    if not taken:
        model.objects.filter(pk=pk, status=states.running, attempts__gte=max_attempts).update(
            status=states.failed, error=gave_up, **{states.ended_at: timezone.now()}
        )
    return bool(taken)
