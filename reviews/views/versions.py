"""The task's prompt and reference answer as they were in each submission (Submission.snapshot)
and each trial batch (RolloutBatch.task_snapshot, which keeps the prompt but not the reference
answer), and any two of those versions compared word by word."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from authoring.selectors import env_task_get_for_user
from core.textdiff import text_diff
from reviews.selectors.versions import prompt_versions_of

FIELDS = (("title", "Title"), ("prompt", "Prompt"), ("reference_answer", "Reference answer"))


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
    versions = prompt_versions_of(env_task=env_task)
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
