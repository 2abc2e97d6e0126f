"""Model-assisted drafting: per-document draft jobs fanned out on the `drafting` queue
(skeleton proposals: authoring.services.skeletons, re-exported here).

Jobs are claimed with a conditional update and finish with one, so a job that runs
twice (a redelivered message, a retry) does nothing the second time, and a cancelled
job's late result is dropped. No transaction is held open around a model call.
"""

import logging
import re
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

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
    VersionSource,
    World,
)
from authoring.render_check import render_problem
from authoring.services.common import author_membership
from authoring.services.documents import clean_document_fields, document_version_record
from authoring.services.skeletons import (  # noqa: F401  (moved there; the old names stay importable from here)
    skeleton_accept,
    skeleton_proposal_execute,
    skeleton_proposals_recover,
    skeleton_suggest,
)
from authoring.tasks import draft_document
from core.exceptions import ApplicationError
from core.jobs import JobStates, claim_job, kept_alive, stale
from llm.client import ChatResult, chat
from llm.errors import ModelError
from llm.models import CallPurpose, ModelEndpoint

logger = logging.getLogger(__name__)
MAX_ATTEMPTS = 3
# A draft that does not build into its file goes back to the model with the error this many
# times before the job fails (each repair is one more model call).
MAX_REPAIRS = 2
METADATA_FIELD = re.compile(r"metadata '(\w+)'")
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
    lost = stale(JOB_STATES)
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
    usage = _Usage()
    try:
        if run.endpoint is None:
            raise ApplicationError("The model endpoint of this run was deleted.")
        if document.status == DocumentStatus.LOCKED:
            raise ApplicationError("The document was locked after drafting was requested; it was left as it is.")
        drafted = _draft_that_builds(job, document, usage)
    except (ModelError, ApplicationError) as error:
        _finish(job, DraftJobStatus.FAILED, error=error.message, usage=usage)
        return
    except Exception as error:  # a bug must still leave a readable, terminal job
        logger.exception("draft job %s failed", job_id)
        _finish(job, DraftJobStatus.FAILED, error=f"Internal error ({type(error).__name__}); the team has the log.", usage=usage)
        return
    if drafted is not None:
        _save_draft(job, drafted, usage)


@dataclass
class _Usage:
    """What the model calls of one job cost, repairs included."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal("0")
    endpoint_name: str = ""
    scripted: bool = False

    def add(self, result: ChatResult) -> None:
        self.input_tokens += result.input_tokens
        self.output_tokens += result.output_tokens
        self.cost += result.cost
        self.endpoint_name, self.scripted = result.endpoint_name, result.scripted

    def spent(self) -> dict:
        # Added to what the job already holds: a retried job keeps the cost of its failed tries.
        return {"input_tokens": F("input_tokens") + self.input_tokens, "output_tokens": F("output_tokens") + self.output_tokens,
                "cost": F("cost") + self.cost}


@dataclass
class _Drafted:
    content: str
    metadata: dict
    based_on: dict  # the document's metadata the merge was made from


def _draft_that_builds(job: DraftJob, document: Document, usage: _Usage) -> _Drafted | None:
    """Ask the model for the document, and build it into its real file (the download's and
    the pack's code). A draft that does not build goes back to the model with the error,
    up to MAX_REPAIRS times; then the job fails with the renderer's reason. None: the job
    was cancelled meanwhile."""
    from authoring.rendering import content_schema, structured_to_content, structured_to_metadata

    run = job.run
    schema = content_schema(document.kind, document.format)
    messages = drafting_prompts.draft_messages(document, drafting_prompts.room_listing(document.world), instruction=run.instruction)
    model_wins: set[str] = set()  # skeleton metadata found invalid: the model's value is used instead
    for attempt in range(MAX_REPAIRS + 1):
        if attempt and not DraftJob.objects.filter(pk=job.pk, status=DraftJobStatus.RUNNING).exists():
            return None  # cancelled while the model worked: no more calls
        result = chat(
            endpoint=run.endpoint, messages=messages, purpose=CallPurpose.DRAFTING, project_id=document.world.project_id, schema=schema
        )
        usage.add(result)
        content = structured_to_content(document.kind, document.format, result.structured)
        drafted_metadata = structured_to_metadata(document.kind, document.format, result.structured)
        metadata, problem = _built(document, content, drafted_metadata, model_wins)
        if not problem:
            return _Drafted(content=content, metadata=metadata, based_on=dict(document.metadata))
        messages = drafting_prompts.repair_messages(messages, result.structured, content, problem, document=document)
    raise ApplicationError(_failure_reason(document, problem, tries=MAX_REPAIRS + 1))


def _merged_metadata(skeleton: dict, drafted: dict, model_wins: set[str]) -> dict:
    # What the expert set in the skeleton wins over what the model proposes, unless it is
    # what stops the document from building and the model has a value for it.
    kept = {k: v for k, v in skeleton.items() if v and not (k in model_wins and drafted.get(k))}
    return {**{k: v for k, v in drafted.items() if v}, **kept}


def _built(document: Document, content: str, drafted_metadata: dict, model_wins: set[str]) -> tuple[dict, str]:
    """(the metadata to save, "" when the document builds into its file, or why not)."""
    while True:
        metadata = _merged_metadata(document.metadata, drafted_metadata, model_wins)
        try:
            clean_document_fields(
                path=document.path, kind=document.kind, format=document.format, metadata=metadata, target_size=document.target_size
            )
        except ApplicationError as error:
            problem = error.message
        else:
            problem = render_problem(kind=document.kind, format=document.format, content=content, metadata=metadata, path=document.path)
        field = _metadata_field(problem)
        if not problem or field is None or field in model_wins or not document.metadata.get(field) or not drafted_metadata.get(field):
            return metadata, problem
        model_wins.add(field)  # the skeleton's value is the problem: try the model's


def _metadata_field(problem: str) -> str | None:
    match = METADATA_FIELD.search(problem)
    return match.group(1) if match else None


def _failure_reason(document: Document, problem: str, *, tries: int) -> str:
    noun = drafting_prompts.document_noun(document)
    return (f"The model's draft could not be built into {noun} after {tries} tries. The last problem: {problem} "
            "Retry, or write the content by hand in the document's editor.")


@transaction.atomic
def _save_draft(job: DraftJob, drafted: _Drafted, usage: _Usage) -> None:
    document = Document.objects.select_for_update().get(pk=job.document_id)
    if document.status == DocumentStatus.LOCKED:
        _finish(job, DraftJobStatus.FAILED, error="The document was locked while it was being drafted; it was left as it is.", usage=usage)
        return
    metadata = drafted.metadata
    if document.metadata != drafted.based_on:  # edited by hand while the model worked: its values still win, and must build
        metadata = {**{k: v for k, v in drafted.metadata.items() if v}, **{k: v for k, v in document.metadata.items() if v}}
        problem = render_problem(kind=document.kind, format=document.format, content=drafted.content, metadata=metadata,
                                 path=document.path)
        if problem:
            _finish(job, DraftJobStatus.FAILED, usage=usage, error=(
                f"The document's details were changed while it was being drafted, and the draft does not build with them: {problem}"
            ))
            return
    finished = DraftJob.objects.filter(pk=job.pk, status=DraftJobStatus.RUNNING).update(
        status=DraftJobStatus.DONE, finished_at=timezone.now(), error="", **usage.spent(),
    )
    if not finished:  # cancelled meanwhile: drop the late result
        return
    document.content, document.metadata, document.status = drafted.content, metadata, DocumentStatus.DRAFTED
    document.revision = F("revision") + 1
    document.save(update_fields=["content", "metadata", "status", "revision", "updated_at"])
    document.refresh_from_db()
    note = f"Drafted by {usage.endpoint_name}" + (" (scripted sample model)" if usage.scripted else "")
    if job.run.instruction:
        note += f" — {job.run.instruction}"
    document_version_record(document=document, source=VersionSource.DRAFTED, user=job.run.requested_by, note=note)


def _finish(job: DraftJob, status: str, *, error: str = "", usage: _Usage | None = None) -> None:
    DraftJob.objects.filter(pk=job.pk, status=DraftJobStatus.RUNNING).update(
        status=status, error=error[:2000], finished_at=timezone.now(), **(usage.spent() if usage else {})
    )
