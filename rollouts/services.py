"""Writes for trial runs: start a batch, cancel it, comment on a step."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import User
from accounts.selectors import membership_get
from accounts.services import require_role
from authoring.models import EnvTask
from authoring.selectors import rubric_version_current, task_input_files_frozen
from authoring.services import rubric_version_freeze
from core.exceptions import ApplicationError, PermissionRefused
from llm.models import ModelEndpoint
from rollouts.constants import LIMITS
from rollouts.models import DEFAULT_SYSTEM_PROMPT, BatchMode, Rollout, RolloutBatch, RolloutStatus, Step, StepComment
from rollouts.tasks import run_rollout
from workspace.models import OverlayPurpose
from workspace.services import overlays_create


def _enqueue(rollout_ids: list[int]) -> None:
    for rollout_id in rollout_ids:
        run_rollout.delay(rollout_id)


@transaction.atomic
def rollout_batch_start(
    *, env_task: EnvTask, user: User, endpoint: ModelEndpoint, n: int, temperature: float | None = None,
    max_steps: int = 20, max_output_tokens: int = 4096, time_limit_seconds: int = 600,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT, mode: str = BatchMode.TOOLS,
) -> RolloutBatch:
    """Freeze the task and its rubric version and queue N rollouts on the `rollouts` queue."""
    require_role(membership_get(user=user, project_id=env_task.project_id), "author")
    if not endpoint.enabled:
        raise ApplicationError(f"The model endpoint {endpoint.name!r} is disabled.")
    values = {"n": n, "max_steps": max_steps, "max_output_tokens": max_output_tokens, "time_limit_seconds": time_limit_seconds}
    for name, value in values.items():
        low, high = LIMITS[name]
        try:
            values[name] = int(value)
        except (TypeError, ValueError):
            raise ApplicationError(f"{name.replace('_', ' ').capitalize()} must be a whole number.") from None
        if not low <= values[name] <= high:
            raise ApplicationError(f"{name.replace('_', ' ').capitalize()} must be between {low:,} and {high:,}.")
    if temperature is not None and not 0 <= float(temperature) <= 2:
        raise ApplicationError("Temperature must be between 0 and 2.")
    if mode not in BatchMode.values:
        raise ApplicationError("Choose whether the agent uses the world's tools.")
    system_prompt = (system_prompt or "").strip() or DEFAULT_SYSTEM_PROMPT
    if len(system_prompt) > 20_000:
        raise ApplicationError("The system prompt is too long (20,000 characters at most).")
    if not env_task.prompt.strip():
        raise ApplicationError("Write the task's prompt before running trials.")
    rubric = rubric_version_current(env_task=env_task)
    rubric_version_freeze(rubric_version=rubric)  # grades of this batch refer to exactly this version
    batch = RolloutBatch.objects.create(
        env_task=env_task, project_id=env_task.project_id, rubric_version=rubric,
        task_snapshot={"title": env_task.title, "prompt": env_task.prompt, "deliverable_kind": env_task.deliverable_kind,
                       "revision": env_task.revision, "input_files": task_input_files_frozen(env_task=env_task)},
        endpoint=endpoint, endpoint_name=endpoint.name, endpoint_scripted=endpoint.is_scripted, mode=mode,
        temperature=None if temperature is None else float(temperature), system_prompt=system_prompt, created_by=user, **values,
    )
    overlays = [None] * values["n"]
    if mode == BatchMode.TOOLS:  # each rollout's own scratch overlay, made here rather than on the worker's hot path
        labels = [f"Rollout {i + 1} of batch {batch.pk}" for i in range(values["n"])]
        overlays = overlays_create(world=env_task.world, user=user, labels=labels, purpose=OverlayPurpose.ROLLOUT,
                                   env_task=env_task)
    rollouts = Rollout.objects.bulk_create(Rollout(batch=batch, index=i, overlay=overlay) for i, overlay in enumerate(overlays))
    ids = [r.pk for r in rollouts]
    transaction.on_commit(lambda: _enqueue(ids))
    return batch


@transaction.atomic
def rollout_batch_cancel(*, batch: RolloutBatch, user: User) -> int:
    """Queued rollouts never start; running ones stop at their next heartbeat (within
    PULSE_SECONDS, plus the model call in flight)."""
    require_role(membership_get(user=user, project_id=batch.project_id), "author")
    RolloutBatch.objects.filter(pk=batch.pk, cancelled_at__isnull=True).update(cancelled_at=timezone.now())
    cancelled = Rollout.objects.filter(batch=batch, status=RolloutStatus.QUEUED).update(
        status=RolloutStatus.CANCELLED, reason="Cancelled before it started.", finished_at=timezone.now()
    )
    # After the queued ones: a rollout claimed in between is running by now, and is flagged here.
    Rollout.objects.filter(batch=batch, status=RolloutStatus.RUNNING).update(stop_requested=True)
    return cancelled


def rollouts_recover(*, queued_for: timedelta | None = timedelta(minutes=1)) -> int:
    """Send again rollouts whose broker message may be lost (see draft_jobs_recover): queued
    for a while, or running with a stale heartbeat (their worker died). The claim takes a
    running rollout over only when its heartbeat is stale, so a live one is never doubled."""
    now = timezone.now()
    lost = Q(status=RolloutStatus.RUNNING, heartbeat_at__lt=now - timedelta(seconds=settings.ROLLOUT_STALE_SECONDS))
    if queued_for is not None:  # (None: only the running ones, see draft_jobs_recover)
        lost |= Q(status=RolloutStatus.QUEUED, batch__created_at__lt=now - queued_for, batch__cancelled_at__isnull=True)
    ids = list(Rollout.objects.filter(lost).values_list("pk", flat=True))
    _enqueue(ids)
    return len(ids)


@transaction.atomic
def step_comment_add(*, step: Step, user: User, text: str) -> StepComment:
    membership = membership_get(user=user, project_id=step.rollout.batch.project_id)
    if not (membership.can_author or membership.can_review):
        raise PermissionRefused("Your role cannot comment.")
    text = (text or "").strip()
    if not text:
        raise ApplicationError("Write a comment first.")
    if len(text) > 10_000:
        raise ApplicationError("The comment is too long (10,000 characters at most).")
    return StepComment.objects.create(step=step, author=user, text=text)
