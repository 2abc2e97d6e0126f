from django.contrib.auth.models import AnonymousUser
from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404

from accounts.models import Membership, Role, User
from accounts.selectors import project_list_for_user
from reviews.models import Review, Submission, SubmissionStatus


def _reviewable_project_ids(user: User) -> QuerySet:
    return Membership.objects.filter(user=user, role__in=[Role.REVIEWER, Role.ADMIN]).values("project_id")


def submission_list_for_user(*, user: User, project_id: int | None = None) -> QuerySet[Submission]:
    qs = Submission.objects.filter(project__in=project_list_for_user(user=user)).select_related(
        "project", "env_task", "submitted_by", "claimed_by", "review", "review__reviewer"
    )
    if project_id is not None:
        qs = qs.filter(project_id=project_id)
    return qs


def submission_get_for_user(*, user: User, pk: int) -> Submission:
    return get_object_or_404(submission_list_for_user(user=user), pk=pk)


def review_queue_for_user(*, user: User | AnonymousUser) -> QuerySet[Submission]:
    """Submissions waiting for a reviewer, in projects where the user reviews, never
    the user's own."""
    if not user.is_authenticated:
        return Submission.objects.none()
    return (
        Submission.objects.filter(project_id__in=_reviewable_project_ids(user), status=SubmissionStatus.QUEUED)
        .exclude(submitted_by=user)
        .select_related("project", "submitted_by")
        .order_by("created_at", "id")
    )


def review_claimed_by_user(*, user: User) -> QuerySet[Submission]:
    return Submission.objects.filter(
        project_id__in=_reviewable_project_ids(user), status=SubmissionStatus.CLAIMED, claimed_by=user
    ).select_related("project", "submitted_by")


def submission_latest_for_task(*, env_task) -> Submission | None:
    return env_task.submissions.select_related("review", "review__reviewer").order_by("-number").first()


def approved_submissions_for_project(*, user: User, project_id: int) -> QuerySet[Submission]:
    return submission_list_for_user(user=user, project_id=project_id).filter(status=SubmissionStatus.APPROVED).order_by("-created_at")


def reviews_for_task(*, user: User, env_task) -> QuerySet[Review]:
    return Review.objects.filter(
        Q(submission__env_task=env_task) & Q(submission__project__in=project_list_for_user(user=user))
    ).select_related("submission", "reviewer").order_by("-created_at")
