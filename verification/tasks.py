from celery import shared_task
from django.db import OperationalError


# One model call per kind of cheat (five), each of which may wait up to 600 s for a slot of the
# endpoint (llm.concurrency), then for the model itself: the time limit leaves room for all of
# them, and stays under the broker's visibility timeout. The claim makes retries harmless.
@shared_task(
    acks_late=True, reject_on_worker_lost=True, time_limit=75 * 60, autoretry_for=(OperationalError,), retry_backoff=True, max_retries=8
)
def probe_run_write_cheats(probe_run_id: int) -> None:
    from verification.services import probe_run_write_cheats as write_cheats

    write_cheats(probe_run_id=probe_run_id)
