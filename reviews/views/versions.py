"""The task's prompt and reference answer as they were in each submission (Submission.snapshot)
and each trial batch (RolloutBatch.task_snapshot, which keeps the prompt but not the reference
answer), and any two of those versions compared word by word."""

from django.db.models.fields.json import KT
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from authoring.selectors import env_task_get_for_user
from core.textdiff import text_diff
from reviews.models import Submission
from rollouts.models import RolloutBatch

FIELDS = (("title", "Title"), ("prompt", "Prompt"), ("reference_answer", "Reference answer"))


def _prompt_versions(env_task) -> list[dict]:
    """Newest first: the task as it is now, then its submissions and trial batches by date.
    Only the task fields are read out of the snapshots (a submission's holds the whole world)."""
    versions = [{"key": "now", "label": "Now (the task as it is being edited)", "short": "Now", "when": env_task.updated_at,
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


def _compare(old: dict, new: dict) -> dict:
    fields = []
    for key, label in FIELDS:
        a, b = old.get(key), new.get(key)
        if a is None or b is None:
            fields.append({"key": key, "label": label, "missing": True})
            continue
        fields.append({"key": key, "label": label, "diff": text_diff(a, b), "text": b})
    return {"old": old, "new": new, "fields": fields, "same": old["key"] == new["key"],
            "nothing_changed": all(not f.get("missing") and not f["diff"]["changed"] for f in fields)}


@require_GET
def prompt_versions(request: HttpRequest, task_pk: int) -> HttpResponse:
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    versions = _prompt_versions(env_task)
    by_key = {v["key"]: v for v in versions}
    a, b = request.GET.get("a", "").strip(), request.GET.get("b", "").strip()
    error, compare = "", None
    if len(versions) > 1:
        a, b = a or versions[1]["key"], b or versions[0]["key"]
        unknown = [k for k in (a, b) if k not in by_key]
        if unknown:
            error = f"There is no version “{unknown[0]}” of this task's prompt. Pick two versions from the lists."
        else:
            compare = _compare(by_key[a], by_key[b])
    context = {"env_task": env_task, "project": env_task.project, "world": env_task.world, "versions": versions,
               "compare": compare, "compare_error": error, "a": a, "b": b}
    if request.headers.get("HX-Request"):
        return render(request, "reviews/prompt_versions.html#compare", context)
    return render(request, "reviews/prompt_versions.html", context)
