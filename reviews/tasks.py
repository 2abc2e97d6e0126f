from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True, time_limit=15 * 60, soft_time_limit=14 * 60)
def render_approved_world(submission_id: int) -> None:
    from reviews.services.submissions import submission_world_render

    submission_world_render(submission_id=submission_id)
