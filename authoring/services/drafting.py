"""Model-assisted drafting: skeleton proposals, and per-document draft jobs fanned out
on the `drafting` queue.

Jobs are claimed with a conditional update and finish with one, so a job that runs
twice (a redelivered message, a retry) does nothing the second time, and a cancelled
job's late result is dropped. No transaction is held open around a model call.
"""

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from accounts.models import User
from authoring import drafting_prompts
from authoring.models import (
    Document,
    DocumentStatus,
    DraftJob,
    DraftJobStatus,
    DraftRun,
    SkeletonProposal,
    SkeletonProposalStatus,
    VersionSource,
    World,
)
from authoring.services.common import author_membership
from authoring.services.documents import clean_document_fields, document_create, document_version_record
from authoring.tasks import draft_document, suggest_skeleton
from core.exceptions import ApplicationError
from core.jobs import JobStates, claim_job, kept_alive, stale
from llm.client import chat
from llm.errors import ModelError
from llm.models import CallPurpose, ModelEndpoint

logger = logging.getLogger(__name__)
MAX_ATTEMPTS = 3
OPEN_STATUSES = (DraftJobStatus.QUEUED, DraftJobStatus.RUNNING)
JOB_STATES = JobStates(queued=DraftJobStatus.QUEUED, running=DraftJobStatus.RUNNING, failed=DraftJobStatus.FAILED)


def _enqueue_jobs(job_ids: list[int]) -> None:
    for job_id in job_ids:
        draft_document.delay(job_id)


# --- Requests (from pages and the API) -------------------------------------------------

@transaction.atomic
def draft_run_start(
    *, world: World, user: User, endpoint: ModelEndpoint, documents: list[Document] | None = None, instruction: str = ""
) -> DraftRun:
    """Queue drafting of the given documents, or of every undrafted one ("Draft all").
    Locked documents are never touched; documents already being drafted are skipped."""
    author_membership(user=user, project_id=world.project_id)
    if not endpoint.enabled:
        raise ApplicationError(f"The model endpoint {endpoint.name!r} is disabled.")
    if len(instruction) > 5_000:
        raise ApplicationError("The instruction is too long (5,000 characters at most).")
    busy = DraftJob.objects.filter(document__world=world, status__in=OPEN_STATUSES).values("document_id")
    if documents is None:
        targets = list(world.documents.filter(status=DocumentStatus.SKELETON).exclude(pk__in=busy))
        if not targets:
            raise ApplicationError("Every document already has content (or is being drafted). Use Redraft on a document to rewrite it.")
    else:
        if not documents:
            raise ApplicationError("Choose at least one document to draft.")
        ids = {d.pk for d in documents}
        documents = list(Document.objects.filter(pk__in=ids, world=world))  # their state now, not as passed in
        if len(documents) != len(ids):
            raise ApplicationError("Those documents are not all in this world.")
        locked = [d.path for d in documents if d.status == DocumentStatus.LOCKED]
        if locked:
            raise ApplicationError(f"{', '.join(locked)} is locked: unlock it before drafting.")
        targets = [d for d in documents if not DraftJob.objects.filter(document=d, status__in=OPEN_STATUSES).exists()]
        if not targets:
            raise ApplicationError("That document is already being drafted.")
    run = DraftRun.objects.create(world=world, endpoint=endpoint, endpoint_name=endpoint.name, requested_by=user, instruction=instruction)
    jobs = DraftJob.objects.bulk_create(DraftJob(run=run, document=d) for d in targets)
    job_ids = [j.pk for j in jobs]
    transaction.on_commit(lambda: _enqueue_jobs(job_ids))
    return run


@transaction.atomic
def draft_run_cancel(*, run: DraftRun, user: User) -> int:
    """Stop a run: queued jobs never start, running jobs' results are dropped."""
    author_membership(user=user, project_id=run.world.project_id)
    DraftRun.objects.filter(pk=run.pk, cancelled_at__isnull=True).update(cancelled_at=timezone.now())
    return DraftJob.objects.filter(run=run, status__in=OPEN_STATUSES).update(
        status=DraftJobStatus.CANCELLED, finished_at=timezone.now(), error="Cancelled."
    )


@transaction.atomic
def draft_job_retry(*, job: DraftJob, user: User) -> DraftJob:
    author_membership(user=user, project_id=job.run.world.project_id)
    if job.document.status == DocumentStatus.LOCKED:
        raise ApplicationError("This document is locked: unlock it before drafting.")
    if DraftJob.objects.filter(document=job.document, status__in=OPEN_STATUSES).exists():
        raise ApplicationError("This document is already being drafted.")
    moved = DraftJob.objects.filter(pk=job.pk, status__in=[DraftJobStatus.FAILED, DraftJobStatus.CANCELLED]).update(
        status=DraftJobStatus.QUEUED, error="", attempts=0, started_at=None, finished_at=None
    )
    if not moved:
        raise ApplicationError("Only a failed or cancelled draft can be retried.")
    DraftRun.objects.filter(pk=job.run_id).update(cancelled_at=None)
    transaction.on_commit(lambda: _enqueue_jobs([job.pk]))
    job.refresh_from_db()
    return job


def draft_jobs_recover(*, queued_for: timedelta | None = timedelta(minutes=1)) -> int:
    """Send again the jobs whose broker message may be lost: queued for a while, or still
    'running' with a stale heartbeat (its worker died; the filesystem broker never
    redelivers, and a message that came back while the heartbeat was still fresh was
    dropped). Claims are conditional, so a job whose message also survived runs once.
    Called when a worker starts and every JOB_STALE_SECONDS (config.celery.RECOVERIES);
    `queued_for=None`: only the running ones."""
    now = timezone.now()
    lost = stale(JOB_STATES, now)
    if queued_for is not None:
        lost |= Q(status=DraftJobStatus.QUEUED, run__created_at__lt=now - queued_for, run__cancelled_at__isnull=True)
    ids = list(DraftJob.objects.filter(lost).values_list("pk", flat=True))
    _enqueue_jobs(ids)
    return len(ids)


def draft_run_progress(*, run: DraftRun) -> dict:
    counts = run.jobs.aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=DraftJobStatus.DONE)),
        failed=Count("id", filter=Q(status=DraftJobStatus.FAILED)),
        cancelled=Count("id", filter=Q(status=DraftJobStatus.CANCELLED)),
        running=Count("id", filter=Q(status=DraftJobStatus.RUNNING)),
        input_tokens=Sum("input_tokens"),
        output_tokens=Sum("output_tokens"),
        cost=Sum("cost"),
    )
    finished = counts["done"] + counts["failed"] + counts["cancelled"]
    counts["remaining"] = counts["total"] - finished
    counts["percent"] = int(100 * finished / counts["total"]) if counts["total"] else 100
    counts["is_finished"] = counts["remaining"] == 0
    return counts


# --- The worker side -----------------------------------------------------------------------

def draft_job_execute(*, job_id: int) -> None:
    """Draft one document. Safe to run twice; a worker killed mid-job leaves the job
    running with a heartbeat that goes stale, and the broker's redelivery (or a recovery)
    re-claims it then, up to MAX_ATTEMPTS (core.jobs)."""
    if not claim_job(
        DraftJob, job_id, states=JOB_STATES, max_attempts=MAX_ATTEMPTS, gave_up="The drafting worker was interrupted too many times."
    ):
        return
    with kept_alive(DraftJob, job_id, states=JOB_STATES):
        _draft(job_id)


def _draft(job_id: int) -> None:
    job = DraftJob.objects.select_related("run", "run__endpoint", "document", "document__world").get(pk=job_id)
    document, run = job.document, job.run
    try:
        if run.endpoint is None:
            raise ApplicationError("The model endpoint of this run was deleted.")
        if document.status == DocumentStatus.LOCKED:
            raise ApplicationError("The document was locked after drafting was requested; it was left as it is.")
        from authoring.rendering import content_schema, structured_to_content, structured_to_metadata

        room = drafting_prompts.room_listing(document.world)
        result = chat(
            endpoint=run.endpoint,
            messages=drafting_prompts.draft_messages(document, room, instruction=run.instruction),
            purpose=CallPurpose.DRAFTING,
            project_id=document.world.project_id,
            schema=content_schema(document.kind, document.format),
        )
        content = structured_to_content(document.kind, document.format, result.structured)
        drafted_metadata = structured_to_metadata(document.kind, document.format, result.structured)
    except (ModelError, ApplicationError) as error:
        _finish(job, DraftJobStatus.FAILED, error=error.message)
        return
    except Exception as error:  # a bug must still leave a readable, terminal job
        logger.exception("draft job %s failed", job_id)
        _finish(job, DraftJobStatus.FAILED, error=f"Internal error ({type(error).__name__}); the team has the log.")
        return
    _save_draft(job, content, drafted_metadata, result)


@transaction.atomic
def _save_draft(job: DraftJob, content: str, drafted_metadata: dict, result) -> None:
    document = Document.objects.select_for_update().get(pk=job.document_id)
    finished = DraftJob.objects.filter(pk=job.pk, status=DraftJobStatus.RUNNING).update(
        status=DraftJobStatus.DONE, finished_at=timezone.now(), input_tokens=result.input_tokens,
        output_tokens=result.output_tokens, cost=result.cost, error="",
    )
    if not finished:  # cancelled meanwhile: drop the late result
        return
    if document.status == DocumentStatus.LOCKED:
        DraftJob.objects.filter(pk=job.pk).update(
            status=DraftJobStatus.FAILED, error="The document was locked while it was being drafted; it was left as it is."
        )
        return
    # What the expert set in the skeleton wins over what the model proposes.
    metadata = {**{k: v for k, v in drafted_metadata.items() if v}, **{k: v for k, v in document.metadata.items() if v}}
    clean_document_fields(
        path=document.path, kind=document.kind, format=document.format, metadata=metadata, target_size=document.target_size
    )
    document.content, document.metadata, document.status = content, metadata, DocumentStatus.DRAFTED
    document.revision = F("revision") + 1
    document.save(update_fields=["content", "metadata", "status", "revision", "updated_at"])
    document.refresh_from_db()
    note = f"Drafted by {result.endpoint_name}" + (" (scripted sample model)" if result.scripted else "")
    if job.run.instruction:
        note += f" — {job.run.instruction}"
    document_version_record(document=document, source=VersionSource.DRAFTED, user=job.run.requested_by, note=note)


def _finish(job: DraftJob, status: str, *, error: str = "") -> None:
    DraftJob.objects.filter(pk=job.pk, status=DraftJobStatus.RUNNING).update(status=status, error=error[:2000], finished_at=timezone.now())


# --- Skeleton proposals ----------------------------------------------------------------------

@transaction.atomic
def skeleton_suggest(*, world: World, user: User, endpoint: ModelEndpoint) -> SkeletonProposal:
    author_membership(user=user, project_id=world.project_id)
    if not endpoint.enabled:
        raise ApplicationError(f"The model endpoint {endpoint.name!r} is disabled.")
    if not world.outline.strip() and not world.facts:
        raise ApplicationError("Write the scenario outline (and ideally the facts sheet) first: the model builds the data room from them.")
    proposal = SkeletonProposal.objects.create(world=world, endpoint=endpoint, endpoint_name=endpoint.name, requested_by=user)
    transaction.on_commit(lambda: suggest_skeleton.delay(proposal.pk))
    return proposal


def skeleton_proposals_recover(*, queued_for: timedelta | None = timedelta(minutes=1)) -> int:
    """Send again the proposals whose broker message may be lost (see draft_jobs_recover).
    A proposal stays queued while the model works on it, so one a live worker is running
    now may be asked twice; the first answer is kept and the second dropped."""
    if queued_for is None:
        return 0  # (a proposal has no running state to go stale)

    ids = list(
        SkeletonProposal.objects.filter(status=SkeletonProposalStatus.QUEUED, created_at__lt=timezone.now() - queued_for)
        .values_list("pk", flat=True)
    )
    for proposal_id in ids:
        suggest_skeleton.delay(proposal_id)
    return len(ids)


def skeleton_proposal_execute(*, proposal_id: int) -> None:
    """Ask the model for a data room. Safe to run twice: only a queued proposal is asked
    for, and only the first answer is kept."""
    proposal = SkeletonProposal.objects.select_related("world", "endpoint").filter(pk=proposal_id).first()
    if proposal is None or proposal.status != SkeletonProposalStatus.QUEUED:
        return  # (its world was deleted, or another delivery finished it)
    try:
        _propose(proposal)
    except (ModelError, ApplicationError) as error:
        _proposal_failed(proposal_id, error.message)
    except Exception as error:  # a bug must still leave a readable, terminal proposal
        logger.exception("skeleton proposal %s failed", proposal_id)
        _proposal_failed(proposal_id, f"Internal error ({type(error).__name__}); the team has the log.")


def _proposal_failed(proposal_id: int, error: str) -> None:
    SkeletonProposal.objects.filter(pk=proposal_id, status=SkeletonProposalStatus.QUEUED).update(
        status=SkeletonProposalStatus.FAILED, error=error[:2000]
    )


def _propose(proposal: SkeletonProposal) -> None:
    world = proposal.world
    if proposal.endpoint is None:
        raise ApplicationError("The model endpoint was deleted.")
    existing = list(world.documents.values_list("path", flat=True))
    result = chat(
        endpoint=proposal.endpoint, messages=drafting_prompts.skeleton_messages(world, existing),
        purpose=CallPurpose.SKELETON, project_id=world.project_id, schema=drafting_prompts.SKELETON_SCHEMA,
    )
    items, seen = [], set(existing)
    for raw in result.structured.get("items", []):
        item = {"path": raw.get("path", ""), "kind": raw.get("kind", "file"), "format": raw.get("format", ""),
                "brief": raw.get("brief", ""), "metadata": raw.get("metadata") or {}, "target_size": raw.get("target_size", 300),
                "accepted": False, "problem": ""}
        try:
            item.update(
                clean_document_fields(
                    path=item["path"], kind=item["kind"], format=item["format"], metadata=item["metadata"], target_size=item["target_size"]
                )
            )
        except ApplicationError as error:
            item["problem"] = error.message
        if item["path"] in seen and not item["problem"]:
            item["problem"] = "A document with this path already exists."
        seen.add(item["path"])
        items.append(item)
    SkeletonProposal.objects.filter(pk=proposal.pk, status=SkeletonProposalStatus.QUEUED).update(
        status=SkeletonProposalStatus.READY, items=items
    )


@transaction.atomic
def skeleton_accept(*, proposal: SkeletonProposal, user: User, indexes: list[int] | None = None) -> list[Document]:
    """Turn proposed items into skeleton documents: the given ones, or all acceptable ones."""
    author_membership(user=user, project_id=proposal.world.project_id)
    proposal = SkeletonProposal.objects.select_for_update().get(pk=proposal.pk)
    if proposal.status != SkeletonProposalStatus.READY:
        raise ApplicationError("This proposal is not ready.")
    chosen = range(len(proposal.items)) if indexes is None else indexes
    created = []
    for index in chosen:
        if not 0 <= index < len(proposal.items):
            raise ApplicationError("That item is not in the proposal.")
        item = proposal.items[index]
        if item["accepted"] or item["problem"]:
            if indexes is not None and item["problem"]:
                raise ApplicationError(f"{item['path']}: {item['problem']}")
            continue
        created.append(document_create(
            world=proposal.world, user=user, path=item["path"], kind=item["kind"], format=item["format"],
            brief=item["brief"], metadata=item["metadata"], target_size=item["target_size"],
        ))
        item["accepted"] = True
    proposal.save(update_fields=["items", "updated_at"])
    return created
