"""The dashboard, the author's review panel on the task page (gates, submit, withdraw,
probe explanations) and the reviewer's queue."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.selectors import authors_anywhere, membership_for, project_list_for_user
from authoring.selectors import env_task_counts_for_user, env_task_drafts_for_author, env_task_get_for_user, rubric_version_current
from core.exceptions import ApplicationError
from core.views import render_with_error
from reviews import selectors, services
from rollouts.models import ProbeAnswer

QUEUE_PAGE_SIZE = 50


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    user = request.user
    context = {
        "projects": project_list_for_user(user=user),
        "drafts": env_task_drafts_for_author(user=user)[:20],
        "queue_count": selectors.review_queue_for_user(user=user).count(),
        "claimed": selectors.review_claimed_by_user(user=user),
        "adjudications": selectors.adjudication_queue_for_user(user=user)[:20],
        "counts": env_task_counts_for_user(user=user),
        # (what to suggest in an empty list: a reviewer cannot write tasks)
        "authors_any": authors_anywhere(user=user),
    }
    return render(request, "reviews/dashboard.html", context)


def _task_reviews_context(request: HttpRequest, env_task, *, note: str = "") -> dict:
    membership = membership_for(user=request.user, project_id=env_task.project_id)
    policy = selectors.review_policy_for_project(project_id=env_task.project_id)
    rubric = rubric_version_current(env_task=env_task)
    gates = selectors.submit_gates(env_task=env_task, rubric_version=rubric, policy=policy) if env_task.is_editable else []
    _, unexplained = selectors.unexplained_probes(env_task=env_task, rubric_version=rubric) if rubric and policy.gate_probes \
        else (None, [])
    submissions = selectors.with_visible_reviews(
        submissions=list(selectors.submission_list_for_user(user=request.user).filter(env_task=env_task).order_by("-number")),
        user=request.user,
    )
    return {
        "env_task": env_task,
        "can_author": membership.can_author,
        "policy": policy,
        "gates": gates,
        "gates_blocked": any(not g.passed for g in gates),
        "unexplained": unexplained,
        "submissions": submissions,
        "latest": submissions[0] if submissions else None,
        "note": note,
    }


def _review_tab(env_task) -> str:
    """The task page with its Review tab open: where the outcome of a submit shows."""
    return reverse("task-editor", args=[env_task.pk]) + "?tab=review"


@require_GET
def task_reviews(request: HttpRequest, task_pk: int) -> HttpResponse:
    """The review side of the task page (loaded into it by htmx): the project's gates, submit,
    withdraw, the reviewers' feedback and every submitted version."""
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    return render(request, "reviews/task_reviews.html", _task_reviews_context(request, env_task))


@require_POST
def task_submit(request: HttpRequest, task_pk: int) -> HttpResponse:
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    note = request.POST.get("note", "")
    try:
        submission = services.submission_create(env_task=env_task, user=request.user, note=note)
    except ApplicationError as error:
        if request.htmx:
            context = {**_task_reviews_context(request, env_task, note=note), "error": error.message}
            return render_with_error(request, "reviews/task_reviews.html", context, error)
        messages.error(request, error.message)
        return redirect(_review_tab(env_task))
    messages.success(request, f"Version {submission.number} is in the review queue.")
    if request.htmx:
        response = HttpResponse()
        response["HX-Redirect"] = _review_tab(env_task)
        return response
    return redirect(_review_tab(env_task))


@require_POST
def probe_explain(request: HttpRequest, task_pk: int, probe_pk: int) -> HttpResponse:
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    probe = get_object_or_404(ProbeAnswer.objects.select_related("run", "run__env_task", "run__rubric_version"),
                              pk=probe_pk, run__env_task=env_task)
    try:
        services.probe_explain(probe=probe, user=request.user, note=request.POST.get("note", ""))
    except ApplicationError as error:
        if request.htmx:
            context = {**_task_reviews_context(request, env_task), "error": error.message}
            return render_with_error(request, "reviews/task_reviews.html", context, error)
        messages.error(request, error.message)
    if request.htmx:
        return render(request, "reviews/task_reviews.html", _task_reviews_context(request, env_task))
    return redirect(_review_tab(env_task))


@require_POST
def submission_withdraw(request: HttpRequest, pk: int) -> HttpResponse:
    submission = selectors.submission_get_for_user(user=request.user, pk=pk)
    try:
        services.submission_withdraw(submission=submission, user=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Version {submission.number} is withdrawn: the task is a draft again.")
    return redirect(reverse("task-editor", args=[submission.env_task_id]) + "?tab=review")


@require_GET
def review_queue(request: HttpRequest) -> HttpResponse:
    """The queue, a page at a time: constant work whatever its length (titles are copied
    out of the snapshot at submission, so no snapshot is read)."""
    page = Paginator(selectors.review_queue_for_user(user=request.user), QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "queue": page.object_list,
        "claimed": selectors.review_claimed_by_user(user=request.user),
        "adjudications": selectors.adjudication_queue_for_user(user=request.user)[:50],
    }
    return render(request, "reviews/review_queue.html", context)


@require_POST
def claim_next(request: HttpRequest) -> HttpResponse:
    submission = services.submission_claim_next(user=request.user)
    if submission is None:
        messages.info(request, "Nothing is waiting for review right now.")
        return redirect("review-queue")
    return redirect("submission-review", pk=submission.pk)
