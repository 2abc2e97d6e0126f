"""What deleting a task or a world would take with it, and why it may not be deleted now
(reviews.services.deletion deletes; its docstring has the rules)."""

from dataclasses import dataclass

from django.db.models import Q

from authoring.models import DraftJob, DraftJobStatus, EnvTask, World
from reviews.models import AuditEvent
from rollouts.models import Grade, GradeStatus, ProbeRun, ProbeRunStatus, Rollout, RolloutBatch, RolloutStatus
from workspace.models import OverlayPurpose

ACTIVE_ROLLOUTS = (RolloutStatus.QUEUED, RolloutStatus.RUNNING)
ACTIVE_GRADES = (GradeStatus.QUEUED, GradeStatus.RUNNING)
ACTIVE_PROBE_RUNS = (ProbeRunStatus.QUEUED, ProbeRunStatus.WRITING)


@dataclass(frozen=True)
class Deletion:
    refusal: str  # why it may not be deleted now; "" when it may
    goes: list[tuple[int, str]]  # (how many, of what) that would be deleted with it


def _counted(*pairs: tuple[int, str, str]) -> list[tuple[int, str]]:
    return [(n, one if n == 1 else many) for n, one, many in pairs if n]


def env_task_deletion(env_task: EnvTask) -> Deletion:
    refusal = ""
    if env_task.submissions.exists() or AuditEvent.objects.filter(env_task=env_task).exists():
        refusal = ("This task has a history in the audit trail (it went to review, or someone commented on it), and the "
                   "trail is kept: the task cannot be deleted.")
    elif (
        Rollout.objects.filter(batch__env_task=env_task, status__in=ACTIVE_ROLLOUTS).exists()
        or Grade.objects.filter(Q(rollout__batch__env_task=env_task) | Q(probe__run__env_task=env_task), status__in=ACTIVE_GRADES).exists()
        or ProbeRun.objects.filter(env_task=env_task, status__in=ACTIVE_PROBE_RUNS).exists()
    ):
        refusal = "Trials, grading or probes are still running on this task. Cancel them, then delete the task once they have stopped."
    goes = _counted(
        (env_task.rubric_versions.count(), "rubric version", "rubric versions"),
        (env_task.input_files.count(), "input file", "input files"),
        (RolloutBatch.objects.filter(env_task=env_task).count(), "trial batch", "trial batches"),
        (Rollout.objects.filter(batch__env_task=env_task).count(), "trial rollout with its steps and grades",
         "trial rollouts with their steps and grades"),
        (ProbeRun.objects.filter(env_task=env_task).count(), "probe run", "probe runs"),
    )
    return Deletion(refusal=refusal, goes=goes)


def world_deletion(world: World) -> Deletion:
    tasks = world.env_tasks.count()
    refusal = ""
    if tasks:
        refusal = (f"{'A task uses' if tasks == 1 else f'{tasks} tasks use'} this world, so it is kept: a world is deleted only "
                   "when no task uses it. Delete its tasks first (a task that went to review keeps its world for good).")
    elif DraftJob.objects.filter(document__world=world, status__in=(DraftJobStatus.QUEUED, DraftJobStatus.RUNNING)).exists():
        refusal = "Drafting is still running in this world. Cancel it, then delete the world once it has stopped."
    goes = _counted(
        (world.documents.count(), "document with its versions", "documents with their versions"),
        (world.overlays.filter(purpose=OverlayPurpose.SANDBOX).count(), "sandbox", "sandboxes"),
        (world.draft_runs.count(), "drafting run", "drafting runs"),
    )
    return Deletion(refusal=refusal, goes=goes)
