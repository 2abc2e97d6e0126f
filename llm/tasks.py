from celery import shared_task
from django.db import OperationalError


# One call with no retries: bounded by the endpoint's timeouts (and a wait for a slot of its
# concurrency cap). The claim in the service makes a second delivery a no-op.
@shared_task(acks_late=True, reject_on_worker_lost=True, time_limit=30 * 60, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=5)
def endpoint_check_run(check_id: int) -> None:
    from llm.services import endpoint_check_run as run

    run(check_id=check_id)
