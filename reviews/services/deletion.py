"""Deleting a task or a world that was made by mistake, or for a try, and has no history.

Here rather than in authoring because what decides it is the audit trail (reviews) and the
runs on the task (rollouts, verification): a task is deleted only while its audit trail is
empty (it never went to review and nobody commented on it) and nothing runs on it, and the
deletion itself is a line of the project's audit trail. A world is deleted only when no task
uses it (so a task that went to review keeps its world for good) and no drafting runs in it.
Everything only the deleted task or world had goes with it, in one transaction; stored files
stay (task files are stored once per content and may be another task's too).
"""

from django.db import transaction
from django.db.models import Q

from accounts.models import User
from authoring.models import EnvTask, World
from authoring.services.common import author_membership
from core.exceptions import ApplicationError
from reviews.models import AuditVerb
from reviews.selectors.deletion import env_task_deletion_refusal, world_deletion_refusal
from reviews.services.audit import audit_record
from rollouts.models import Grade, ProbeRun, Rollout, RolloutBatch
from workspace.models import Overlay


@transaction.atomic
def env_task_delete(*, env_task: EnvTask, user: User) -> str:
    """Delete a task with its rubric versions, input files, trial batches (their rollouts,
    steps, grades and what their agents wrote) and probe runs. Returns its title, for the message."""
    author_membership(user=user, project_id=env_task.project_id)
    env_task = EnvTask.objects.select_for_update().get(pk=env_task.pk)
    refusal = env_task_deletion_refusal(env_task)
    if refusal:
        raise ApplicationError(refusal)
    title, project_id, pk = env_task.title, env_task.project_id, env_task.pk
    # The grades and runs first: they hold the task's rubric versions, which may not go before them.
    Grade.objects.filter(Q(rollout__batch__env_task=env_task) | Q(probe__run__env_task=env_task)).delete()
    overlays = list(Rollout.objects.filter(batch__env_task=env_task).values_list("overlay_id", flat=True))
    RolloutBatch.objects.filter(env_task=env_task).delete()
    Overlay.objects.filter(pk__in=overlays).delete()  # what each rollout's agent wrote, over the world
    ProbeRun.objects.filter(env_task=env_task).delete()
    env_task.delete()
    audit_record(project_id=project_id, verb=AuditVerb.TASK_DELETED, actor=user, summary=f"Deleted the task “{title}”.",
                 data={"task": pk, "title": title})
    return title


@transaction.atomic
def world_delete(*, world: World, user: User) -> str:
    """Delete a world with its documents and their versions, drafting runs, skeleton
    proposals and sandboxes. Returns its title, for the message."""
    author_membership(user=user, project_id=world.project_id)
    world = World.objects.select_for_update().get(pk=world.pk)
    refusal = world_deletion_refusal(world)
    if refusal:
        raise ApplicationError(refusal)
    title, project_id, pk = world.title, world.project_id, world.pk
    world.delete()
    audit_record(project_id=project_id, verb=AuditVerb.WORLD_DELETED, actor=user, summary=f"Deleted the world “{title}”.",
                 data={"world": pk, "title": title})
    return title
