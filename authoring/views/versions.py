"""Compare any two versions of a document, or of a task's rubric (a plain GET form: ?a=<n>&b=<n>)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.selectors import membership_for
from authoring import selectors
from authoring.diffs import document_versions_diff, rubric_versions_diff


def _pick(request: HttpRequest, numbers: list[int]) -> tuple[int | None, int | None, str]:
    """The two version numbers asked for (?a=&b=), defaulting to the one before the latest and
    the latest; an error in plain words when one is not a version of this item."""
    if len(numbers) < 2:
        return None, None, ""
    latest, before = numbers[0], numbers[1]  # newest first
    raw_a, raw_b = request.GET.get("a", "").strip(), request.GET.get("b", "").strip()
    picked = []
    for raw, default in ((raw_a, before), (raw_b, latest)):
        if not raw:
            picked.append(default)
            continue
        value = raw.lstrip("vV")
        if not value.isdigit() or int(value) not in numbers:
            return None, None, (f"There is no version “{raw}”. Pick two versions from the lists "
                                f"(1 to {max(numbers)}).")
        picked.append(int(value))
    return picked[0], picked[1], ""


@require_GET
def document_versions_compare(request: HttpRequest, pk: int) -> HttpResponse:
    """The document's versions page with two of them compared, line by line with the changed
    words marked (a spreadsheet by the values its grid shows)."""
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    versions = list(document.versions.select_related("created_by"))
    a, b, error = _pick(request, [v.number for v in versions])
    by_number = {v.number: v for v in versions}
    compare = None
    if a is not None and b is not None:
        compare = document_versions_diff(document=document, old=by_number[a], new=by_number[b])
    membership = membership_for(user=request.user, project_id=document.world.project_id)
    return render(request, "authoring/document_versions.html", {
        "document": document, "world": document.world, "project": document.world.project, "versions": versions,
        "shown": versions[0] if versions else None, "can_author": membership.can_author, "comparing": True,
        "compare": compare, "compare_error": error, "a": a, "b": b,
    })


@require_GET
def rubric_versions(request: HttpRequest, pk: int) -> HttpResponse:
    """Every version of the task's rubric, and any two compared: criteria added, removed and
    changed (text, points, tag, grader) and the grading settings."""
    env_task = selectors.env_task_get_for_user(user=request.user, pk=pk)
    versions = list(env_task.rubric_versions.order_by("-number").prefetch_related("criteria").select_related("created_by"))
    a, b, error = _pick(request, [v.number for v in versions])
    by_number = {v.number: v for v in versions}
    compare = rubric_versions_diff(old=by_number[a], new=by_number[b]) if a is not None and b is not None else None
    context = {"env_task": env_task, "project": env_task.project, "world": env_task.world, "versions": versions,
               "compare": compare, "compare_error": error, "a": a, "b": b}
    if request.headers.get("HX-Request"):
        return render(request, "authoring/rubric_versions.html#compare", context)
    return render(request, "authoring/rubric_versions.html", context)
