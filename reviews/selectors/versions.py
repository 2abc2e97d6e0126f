"""The versions of a task's prompt and reference answer: the task now, each submission's
snapshot and each trial batch's (which keeps the prompt but not the reference answer)."""

from django.db.models.fields.json import KT

from authoring.models import EnvTask
from reviews.models import Submission
from rollouts.models import RolloutBatch


def prompt_versions_of(*, env_task: EnvTask) -> list[dict]:
    """Newest first: the task as it is now, then its submissions and trial batches by date.
    Only the task fields are read out of the snapshots (a submission's holds the whole world).
    No access check: the caller read the task through env_task_get_for_user."""
    now = ("Now (the task as it is being edited)" if env_task.is_editable
           else f"Now (the task as it stands: {env_task.get_status_display().lower()}, not being edited)")
    versions = [{"key": "now", "label": now, "short": "Now", "when": env_task.updated_at,
                 "title": env_task.title, "prompt": env_task.prompt, "reference_answer": env_task.reference_answer}]
    submissions = (Submission.objects.filter(env_task=env_task)
                   .annotate(t_prompt=KT("snapshot__task__prompt"), t_reference=KT("snapshot__task__reference_answer"))
                   .only("pk", "number", "title", "created_at", "status", "submitted_by__username").select_related("submitted_by"))
    dated = [{"key": f"s{s.number}", "label": f"Submission v{s.number} ({s.get_status_display().lower()})",
              "short": f"Submission v{s.number}", "when": s.created_at, "by": s.submitted_by, "title": s.title,
              "prompt": s.t_prompt or "", "reference_answer": s.t_reference or ""} for s in submissions]
    batches = (RolloutBatch.objects.filter(env_task=env_task)
               .only("pk", "created_at", "task_snapshot", "endpoint_name", "n", "created_by__username").select_related("created_by"))
    dated += [{"key": f"b{b.pk}", "label": f"Trial batch {b.pk} ({b.n} run{'s' if b.n != 1 else ''} on {b.endpoint_name})",
               "short": f"Trial batch {b.pk}", "when": b.created_at, "by": b.created_by,
               "title": (b.task_snapshot or {}).get("title", ""), "prompt": (b.task_snapshot or {}).get("prompt", ""),
               "reference_answer": None, "url_name": "batch-detail", "pk": b.pk} for b in batches]
    dated.sort(key=lambda v: v["when"], reverse=True)
    return versions + dated
