from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from accounts.selectors import membership_for, project_list_for_user
from authoring.selectors import env_task_counts_for_user, env_task_drafts_for_author, env_task_get_for_user
from core.exceptions import ApplicationError
from core.services import status_history
from core.views import render_error
from reviews import selectors, services
from reviews.forms import DecisionForm
from verification.selectors import probe_status


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    user = request.user
    context = {
        "projects": project_list_for_user(user=user),
        "drafts": env_task_drafts_for_author(user=user)[:20],
        "queue_count": selectors.review_queue_for_user(user=user).count(),
        "claimed": selectors.review_claimed_by_user(user=user),
        "counts": env_task_counts_for_user(user=user),
    }
    return render(request, "reviews/dashboard.html", context)


@require_GET
def task_reviews(request: HttpRequest, task_pk: int) -> HttpResponse:
    """The review side of the task page (loaded into it by htmx): submit button,
    the reviewer's feedback and every submitted version."""
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    membership = membership_for(user=request.user, project_id=env_task.project_id)
    context = {
        "env_task": env_task,
        "can_author": membership.can_author,
        "submissions": selectors.submission_list_for_user(user=request.user).filter(env_task=env_task).order_by("-number"),
        "latest": selectors.submission_latest_for_task(env_task=env_task),
    }
    return render(request, "reviews/task_reviews.html", context)


@require_POST
def task_submit(request: HttpRequest, task_pk: int) -> HttpResponse:
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    try:
        submission = services.submission_create(env_task=env_task, user=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Version {submission.number} is in the review queue.")
    return redirect("task-editor", pk=env_task.pk)


@require_GET
def review_queue(request: HttpRequest) -> HttpResponse:
    context = {
        "queue": selectors.review_queue_for_user(user=request.user),
        "claimed": selectors.review_claimed_by_user(user=request.user),
    }
    return render(request, "reviews/review_queue.html", context)


@require_POST
def claim_next(request: HttpRequest) -> HttpResponse:
    submission = services.submission_claim_next(user=request.user)
    if submission is None:
        messages.info(request, "Nothing is waiting for review right now.")
        return redirect("review-queue")
    return redirect("submission-review", pk=submission.pk)


def _review_context(request: HttpRequest, submission, form=None) -> dict:
    membership = membership_for(user=request.user, project_id=submission.project_id)
    return {
        "submission": submission,
        "snapshot": submission.snapshot,
        "project": submission.project,
        "positive_points": sum(c["points"] for c in submission.snapshot["rubric"]["criteria"] if c["points"] > 0),
        "form": form or DecisionForm(),
        "is_claimant": submission.claimed_by_id == request.user.pk and submission.status == "claimed",
        "can_review": membership.can_review and submission.submitted_by_id != request.user.pk,
        "history": status_history(subject=submission),
        # What the probes found on the submitted rubric version (the task is the submission's,
        # which the access-scoped selector has already allowed).
        "probe_status": probe_status(env_task=submission.env_task, rubric_version=submission.rubric_version),
    }


@require_GET
def submission_review(request: HttpRequest, pk: int) -> HttpResponse:
    submission = selectors.submission_get_for_user(user=request.user, pk=pk)
    return render(request, "reviews/submission_review.html", _review_context(request, submission))


@require_POST
def submission_decide(request: HttpRequest, pk: int) -> HttpResponse:
    submission = selectors.submission_get_for_user(user=request.user, pk=pk)
    form = DecisionForm(request.POST)
    try:
        if not form.is_valid():
            raise ApplicationError("Choose approve or request changes; the comment holds at most 20,000 characters.")
        review = services.review_decide(
            submission=submission, user=request.user, decision=form.cleaned_data["decision"], comment=form.cleaned_data["comment"]
        )
    except ApplicationError as error:
        return render_error(request, "reviews/submission_review.html", _review_context(request, submission, form=form), error)
    messages.success(request, f"{review.get_decision_display()}: {submission.title} v{submission.number}.")
    return redirect("review-queue")


@require_POST
def submission_release(request: HttpRequest, pk: int) -> HttpResponse:
    submission = selectors.submission_get_for_user(user=request.user, pk=pk)
    try:
        services.submission_release(submission=submission, user=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    return redirect("review-queue")
