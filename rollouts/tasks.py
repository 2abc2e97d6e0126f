from celery import shared_task
from celery.signals import worker_ready

from rollouts.services import LIMITS, TASK_TIME_MARGIN


@shared_task(acks_late=True, reject_on_worker_lost=True, time_limit=LIMITS["time_limit_seconds"][1] + TASK_TIME_MARGIN)
def run_rollout(rollout_id: int) -> None:
    from rollouts.agent import rollout_execute

    rollout_execute(rollout_id=rollout_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, time_limit=30 * 60)
def grade_attempt(grade_id: int) -> None:
    from rollouts.grading.services import grade_execute

    grade_execute(grade_id=grade_id)


@worker_ready.connect
def recover_rollouts(**kwargs) -> None:
    from rollouts.services import rollouts_recover

    rollouts_recover()
