from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True, time_limit=30 * 60, soft_time_limit=29 * 60)
def build_pack(pack_id: int) -> None:
    from packs.services import pack_build

    pack_build(pack_id=pack_id)
