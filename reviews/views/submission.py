"""A submission's review page: the evidence first, then the checklist and the decision;
the admin's adjudication when the reviewers disagree."""

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.selectors import membership_for
from authoring.selectors import task_input_file_frozen_download, task_input_files_with_text
from core.exceptions import ApplicationError
from core.files import attachment_response
from core.services import status_history
from core.views import render_error
from reviews import selectors, services
from reviews.forms import AdjudicationForm, DecisionForm, checklist_marks
from reviews.models import Submission, SubmissionStatus
from reviews.selectors.diff import submission_diff
from reviews.selectors.evidence import submission_evidence


def _review_context(request: HttpRequest, submission: Submission, *, form=None, adjudication_form=None, typed=None) -> dict:
    user = request.user
    membership = membership_for(user=user, project_id=submission.project_id)
    reviews, hidden_reviews = selectors.reviews_visible_to(submission=submission, user=user)
    is_claimant = submission.claimed_by_id == user.pk and submission.status == SubmissionStatus.CLAIMED
    previous = selectors.submission_previous(submission=submission)
    items = selectors.checklist_items(project_id=submission.project_id)
    return {
        "submission": submission,
        "snapshot": submission.snapshot,
        "project": submission.project,
        "positive_points": sum(c["points"] for c in submission.snapshot["rubric"]["criteria"] if c["points"] > 0),
        "form": form or DecisionForm(),
        "adjudication_form": adjudication_form or AdjudicationForm(),
        "checklist": [(item, (typed or {}).get(item.pk, {})) for item in items],
        "is_claimant": is_claimant,
        "can_review": membership.can_review and submission.submitted_by_id != user.pk,
        "can_adjudicate": (membership.can_export and submission.submitted_by_id != user.pk
                           and submission.status == SubmissionStatus.ADJUDICATION),
        "reviews": reviews,
        "hidden_reviews": hidden_reviews,
        "adjudication": getattr(submission, "adjudication", None),
        "history": _history(submission),
        "evidence": submission_evidence(submission=submission, user=user),
        "previous": previous,
        "diff": submission_diff(previous=previous, current=submission) if previous else None,
        "input_files": task_input_files_with_text(env_task_id=submission.env_task_id, frozen=_frozen_files(submission)),
    }


def _frozen_files(submission: Submission) -> list[dict]:
    return submission.snapshot.get("task", {}).get("input_files") or []


@require_GET
def submission_input_file(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    """The bytes of the version's input file `number` (1-based, in path order), as it was submitted."""
    submission = selectors.submission_get_for_user(user=request.user, pk=pk)
    frozen = _frozen_files(submission)
    if not 1 <= number <= len(frozen):
        raise Http404("This version has no such input file.")
    data, name = task_input_file_frozen_download(entry=frozen[number - 1])
    return attachment_response(data, filename=name, content_type="application/octet-stream")


@require_GET
def submission_review(request: HttpRequest, pk: int) -> HttpResponse:
    submission = selectors.submission_get_for_user(user=request.user, pk=pk)
    return render(request, "reviews/submission_review.html", _review_context(request, submission))


def _history(submission: Submission) -> list:
    """The version's status changes, each status by its label (as its badge reads)."""
    labels = dict(SubmissionStatus.choices)
    history = list(status_history(subject=submission))
    for change in history:
        change.from_label = labels.get(change.from_status, change.from_status) if change.from_status else "Submitted"
        change.to_label = labels.get(change.to_status, change.to_status)
    return history


@require_http_methods(["GET", "POST"])
def submission_decide(request: HttpRequest, pk: int) -> HttpResponse:
    submission = selectors.submission_get_for_user(user=request.user, pk=pk)
    if request.method == "GET":
        # A refused decision is shown at this address (what the reviewer typed is kept): opened
        # again, or reloaded as a plain visit, it is the submission's page.
        return redirect("submission-review", pk=submission.pk)
    form = DecisionForm(request.POST)
    marks, typed = checklist_marks(request.POST, selectors.checklist_items(project_id=submission.project_id))
    try:
        if not form.is_valid():
            raise ApplicationError("Choose approve or request changes; the comment holds at most 20,000 characters.")
        review = services.review_decide(submission=submission, user=request.user, decision=form.cleaned_data["decision"],
                                        comment=form.cleaned_data["comment"], checklist=marks)
    except ApplicationError as error:
        submission = selectors.submission_get_for_user(user=request.user, pk=pk)
        context = _review_context(request, submission, form=form, typed=typed)
        return render_error(request, "reviews/submission_review.html", context, error)
    submission.refresh_from_db(fields=["status"])
    outcome = {
        SubmissionStatus.QUEUED: "it goes on to the next reviewer",
        SubmissionStatus.ADJUDICATION: "the reviewers disagree, so an admin decides",
    }.get(submission.status, "the author has been told")
    messages.success(request, f"{review.decision_done}: {submission.title} v{submission.number} — {outcome}.")
    return redirect("review-queue")


@require_POST
def submission_release(request: HttpRequest, pk: int) -> HttpResponse:
    submission = selectors.submission_get_for_user(user=request.user, pk=pk)
    try:
        services.submission_release(submission=submission, user=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    return redirect("review-queue")


@require_POST
def submission_adjudicate(request: HttpRequest, pk: int) -> HttpResponse:
    submission = selectors.submission_get_for_user(user=request.user, pk=pk)
    form = AdjudicationForm(request.POST)
    try:
        if not form.is_valid():
            raise ApplicationError("Choose approve or request changes, and say why (20,000 characters at most).")
        adjudication = services.submission_adjudicate(submission=submission, user=request.user, decision=form.cleaned_data["decision"],
                                                      note=form.cleaned_data["note"])
    except ApplicationError as error:
        context = _review_context(request, submission, adjudication_form=form)
        return render_error(request, "reviews/submission_review.html", context, error)
    messages.success(request, f"Settled: {adjudication.decision_done}, {submission.title} v{submission.number}.")
    return redirect("review-queue")
