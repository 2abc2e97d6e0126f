from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True, time_limit=15 * 60, soft_time_limit=14 * 60)
def draft_document(job_id: int) -> None:
    from authoring.services.drafting import draft_job_execute

    draft_job_execute(job_id=job_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, time_limit=15 * 60, soft_time_limit=14 * 60)
def suggest_skeleton(proposal_id: int) -> None:
    from authoring.services.drafting import skeleton_proposal_execute

    skeleton_proposal_execute(proposal_id=proposal_id)
