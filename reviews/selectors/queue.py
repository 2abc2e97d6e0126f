"""Submissions, the review queue and what a reviewer holds. Lists never read a snapshot
(it holds the whole world): they defer it and show the title copied at submission."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db.models import Prefetch, Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone

from accounts.models import Membership, Role, User
from accounts.selectors import project_list_for_user
from reviews.models import Decision, Review, Submission, SubmissionStatus


def claim_cutoff():
    """Claims taken before this have lapsed: the next reviewer who asks gets the item."""
    return timezone.now() - timedelta(hours=settings.REVIEW_CLAIM_TIMEOUT_HOURS)


def _reviewable_project_ids(user: User) -> QuerySet:
    return Membership.objects.filter(user=user, role__in=[Role.REVIEWER, Role.ADMIN]).values("project_id")


def _reviews():
    return Prefetch("reviews", queryset=Review.objects.select_related("reviewer").order_by("created_at", "id"))


def submission_list_for_user(*, user: User, project_id: int | None = None) -> QuerySet[Submission]:
    qs = (Submission.objects.filter(project__in=project_list_for_user(user=user)).defer("snapshot")
          .select_related("project", "env_task", "submitted_by", "claimed_by", "adjudication", "adjudication__admin")
          .prefetch_related(_reviews()))
    if project_id is not None:
        qs = qs.filter(project_id=project_id)
    return qs


def submission_get_for_user(*, user: User, pk: int) -> Submission:
    """One submission with its snapshot, 404 outside the user's projects."""
    return get_object_or_404(submission_list_for_user(user=user).defer(None), pk=pk)


def _claimable() -> Q:
    return Q(status=SubmissionStatus.QUEUED) | Q(status=SubmissionStatus.CLAIMED, claimed_at__lt=claim_cutoff())


def review_queue_for_user(*, user: User | AnonymousUser) -> QuerySet[Submission]:
    """Submissions the user may claim, oldest first: waiting (or held by a lapsed claim) in
    projects where the user reviews, never the user's own, never one they already reviewed."""
    if not user.is_authenticated:
        return Submission.objects.none()
    return (
        Submission.objects.filter(_claimable(), project_id__in=_reviewable_project_ids(user))
        .exclude(submitted_by=user)
        .exclude(pk__in=Review.objects.filter(reviewer=user).values("submission_id"))
        .defer("snapshot")
        .select_related("project", "submitted_by")
        .order_by("created_at", "id")
    )


def review_claimed_by_user(*, user: User) -> QuerySet[Submission]:
    return Submission.objects.filter(
        project_id__in=_reviewable_project_ids(user), status=SubmissionStatus.CLAIMED, claimed_by=user
    ).defer("snapshot").select_related("project", "submitted_by")


def adjudication_queue_for_user(*, user: User) -> QuerySet[Submission]:
    """Submissions whose reviewers disagreed, in projects the user administers (never their own)."""
    admin_of = Membership.objects.filter(user=user, role=Role.ADMIN).values("project_id")
    return (Submission.objects.filter(project_id__in=admin_of, status=SubmissionStatus.ADJUDICATION).exclude(submitted_by=user)
            .defer("snapshot").select_related("project", "submitted_by").order_by("updated_at", "id"))


def submission_latest_for_task(*, env_task) -> Submission | None:
    return (env_task.submissions.defer("snapshot").select_related("adjudication", "adjudication__admin").prefetch_related(_reviews())
            .order_by("-number").first())


def submission_previous(*, submission: Submission) -> Submission | None:
    """The same task's version before this one (with its snapshot), if any."""
    return Submission.objects.filter(env_task_id=submission.env_task_id, number__lt=submission.number).order_by("-number").first()


def approved_submissions_for_project(*, user: User, project_id: int) -> QuerySet[Submission]:
    """The approved versions, newest first, each with who approved it: `approvals` (the
    reviews that approved, oldest first) and, when the reviewers disagreed, `adjudication`."""
    approvals = Review.objects.filter(decision=Decision.APPROVE).select_related("reviewer").order_by("created_at", "pk")
    return (submission_list_for_user(user=user, project_id=project_id).filter(status=SubmissionStatus.APPROVED)
            .select_related("adjudication__admin").prefetch_related(Prefetch("reviews", queryset=approvals, to_attr="approvals"))
            .order_by("-created_at"))


def reviews_for_task(*, user: User, env_task) -> QuerySet[Review]:
    return Review.objects.filter(
        Q(submission__env_task=env_task) & Q(submission__project__in=project_list_for_user(user=user))
    ).select_related("submission", "reviewer").prefetch_related("answers").order_by("-created_at")


# While a version is waiting or being reviewed, a reviewer who may still decide on it does
# not see the others' decisions: reviewers decide independently, which is what makes their
# agreement worth measuring.
REVIEWABLE = (SubmissionStatus.QUEUED, SubmissionStatus.CLAIMED)


def submissions_blind_to(*, user: User) -> QuerySet:
    """The ids of the versions whose reviews the user may not read yet: waiting or being
    reviewed in a project where the user reviews, not the user's own, not reviewed by them."""
    return (Submission.objects.filter(status__in=REVIEWABLE, project_id__in=_reviewable_project_ids(user))
            .exclude(submitted_by=user).exclude(reviews__reviewer=user).values("pk"))


def with_visible_reviews(*, submissions: list[Submission], user: User) -> list[Submission]:
    """The task's versions, each with `visible_reviews` and `hidden_reviews` (how many the
    user may not read yet: submissions_blind_to), in one query for all of them."""
    blind = set(submissions_blind_to(user=user).filter(pk__in=[s.pk for s in submissions]).values_list("pk", flat=True))
    for submission in submissions:
        reviews = list(submission.reviews.all())
        submission.visible_reviews, submission.hidden_reviews = ([], len(reviews)) if submission.pk in blind else (reviews, 0)
    return submissions


def reviews_visible_to(*, submission: Submission, user: User) -> tuple[list[Review], int]:
    """The reviews of this version the user may read, and how many are hidden (see
    submissions_blind_to): on the submission's page, in the task's Review tab and in its
    audit trail alike, before a claim as while holding one."""
    reviews = list(submission.reviews.all())
    if reviews and submissions_blind_to(user=user).filter(pk=submission.pk).exists():
        return [], len(reviews)
    return reviews, 0


def submissions_waiting_count(*, project_id: int) -> int:
    """How many of the project's submissions wait for a decision (queued, claimed, or disputed)."""
    return Submission.objects.filter(project_id=project_id, status__in=Submission.OPEN_STATUSES).count()
