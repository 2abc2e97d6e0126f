"""What deleting a task or a world would take with it, and why it may not be deleted now
(reviews.services.deletion deletes; its docstring has the rules)."""

from dataclasses import dataclass

from django.db.models import Q

from authoring.models import DraftJob, EnvTask, World
from authoring.services.drafting import OPEN_STATUSES as DRAFTING
from reviews.models import AuditEvent
from rollouts.models import Grade, ProbeRun, Rollout, RolloutBatch, RolloutStatus
from verification.selectors import CHEATS_PENDING, PENDING
from workspace.models import OverlayPurpose

ACTIVE_ROLLOUTS = (RolloutStatus.QUEUED, RolloutStatus.RUNNING)


@dataclass(frozen=True)
class Deletion:
    refusal: str  # why it may not be deleted now; "" when it may
    goes: list[tuple[int, str]]  # (how many, of what) that would be deleted with it


def _counted(*pairs: tuple[int, str, str]) -> list[tuple[int, str]]:
    return [(n, one if n == 1 else many) for n, one, many in pairs if n]


def env_task_deletion_refusal(env_task: EnvTask) -> str:
    """Why `env_task` may not be deleted now ("" when it may)."""
    if env_task.submissions.exists() or AuditEvent.objects.filter(env_task=env_task).exists():
        return ("This task has a history in the audit trail (it went to review, or someone commented on it), and the "
                "trail is kept: the task cannot be deleted.")
    if (
        Rollout.objects.filter(batch__env_task=env_task, status__in=ACTIVE_ROLLOUTS).exists()
        or Grade.objects.filter(Q(rollout__batch__env_task=env_task) | Q(probe__run__env_task=env_task), status__in=PENDING).exists()
        or ProbeRun.objects.filter(env_task=env_task, status__in=CHEATS_PENDING).exists()
    ):
        return "Trials, grading or probes are still running on this task. Cancel them, then delete the task once they have stopped."
    return ""


def env_task_deletion(env_task: EnvTask) -> Deletion:
    """For the page that asks first: the refusal, or what would go with the task."""
    return Deletion(refusal=env_task_deletion_refusal(env_task), goes=_counted(
        (env_task.rubric_versions.count(), "rubric version", "rubric versions"),
        (env_task.input_files.count(), "input file", "input files"),
        (RolloutBatch.objects.filter(env_task=env_task).count(), "trial batch", "trial batches"),
        (Rollout.objects.filter(batch__env_task=env_task).count(), "trial rollout with its steps and grades",
         "trial rollouts with their steps and grades"),
        (ProbeRun.objects.filter(env_task=env_task).count(), "probe run", "probe runs"),
    ))


def world_deletion_refusal(world: World) -> str:
    """Why `world` may not be deleted now ("" when it may)."""
    tasks = world.env_tasks.count()
    if tasks:
        return (f"{'A task uses' if tasks == 1 else f'{tasks} tasks use'} this world, so it is kept: a world is deleted only "
                "when no task uses it. Delete its tasks first (a task that went to review keeps its world for good).")
    if DraftJob.objects.filter(document__world=world, status__in=DRAFTING).exists():
        return "Drafting is still running in this world. Cancel it, then delete the world once it has stopped."
    return ""


def world_deletion(world: World) -> Deletion:
    """For the page that asks first: the refusal, or what would go with the world."""
    return Deletion(refusal=world_deletion_refusal(world), goes=_counted(
        (world.documents.count(), "document with its versions", "documents with their versions"),
        (world.overlays.filter(purpose=OverlayPurpose.SANDBOX).count(), "sandbox", "sandboxes"),
        (world.draft_runs.count(), "drafting run", "drafting runs"),
    ))
