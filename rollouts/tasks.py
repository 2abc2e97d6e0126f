from celery import shared_task
from django.db import InterfaceError, OperationalError

from rollouts.constants import GRADE_TIME_LIMIT, LIMITS, TASK_TIME_MARGIN


# A database that is briefly unreachable (restarting, out of connections) must not leave a
# rollout queued forever: the job is retried with backoff; the claim keeps retries harmless.
@shared_task(acks_late=True, reject_on_worker_lost=True, time_limit=LIMITS["time_limit_seconds"][1] + TASK_TIME_MARGIN,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=True, max_retries=8)
def run_rollout(rollout_id: int) -> None:
    from rollouts.agent import rollout_execute

    rollout_execute(rollout_id=rollout_id)


@shared_task(
    acks_late=True, reject_on_worker_lost=True, time_limit=GRADE_TIME_LIMIT, autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True, max_retries=8,
)
def grade_attempt(grade_id: int) -> None:
    from rollouts.grading.services import grade_execute

    grade_execute(grade_id=grade_id)
