from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import User
from accounts.selectors import membership_get
from accounts.services import require_role
from authoring.models import EnvTask, EnvTaskStatus
from authoring.selectors import rubric_version_current
from authoring.services import env_task_set_status, env_task_snapshot, rubric_version_freeze
from core.exceptions import ApplicationError, PermissionRefused
from core.services import status_change_record
from reviews.models import Decision, Review, Submission, SubmissionStatus
from reviews.selectors import review_claimed_by_user, review_queue_for_user


@transaction.atomic
def submission_create(*, env_task: EnvTask, user: User) -> Submission:
    """Freeze the task's current prompt, rubric and world into a new immutable version
    and put it in the review queue."""
    membership = membership_get(user=user, project_id=env_task.project_id)
    require_role(membership, "author")
    env_task = EnvTask.objects.select_for_update().select_related("world").get(pk=env_task.pk)
    if env_task.status not in EnvTask.EDITABLE_STATUSES:
        raise ApplicationError(f"This task is {env_task.get_status_display().lower()} and cannot be submitted now.")
    rubric = rubric_version_current(env_task=env_task)
    problems = []
    if not env_task.prompt.strip():
        problems.append("write the prompt")
    if rubric is None or not rubric.criteria.exists():
        problems.append("add at least one rubric criterion")
    elif not rubric.criteria.filter(points__gt=0).exists():
        problems.append("give at least one criterion positive points")
    if problems:
        raise ApplicationError("Before submitting, " + " and ".join(problems) + ".")
    rubric_version_freeze(rubric_version=rubric)
    number = (env_task.submissions.aggregate(n=Max("number"))["n"] or 0) + 1
    submission = Submission.objects.create(
        project_id=env_task.project_id,
        env_task=env_task,
        number=number,
        rubric_version=rubric,
        snapshot=env_task_snapshot(env_task=env_task, rubric_version=rubric),
        submitted_by=user,
    )
    status_change_record(subject=submission, project_id=submission.project_id, actor=user, from_status="", to_status=submission.status)
    env_task_set_status(env_task=env_task, actor=user, to_status=EnvTaskStatus.IN_REVIEW, note=f"Submitted version {number}")
    return submission


def submission_claim_next(*, user: User) -> Submission | None:
    """Give the reviewer the oldest waiting submission nobody else holds.

    The claim is a conditional UPDATE (status=queued → claimed): of two reviewers racing
    for the same row exactly one update matches, the other moves on to the next row.
    A reviewer already holding an item gets that item back instead of a second one.
    """
    held = review_claimed_by_user(user=user).order_by("claimed_at").first()
    if held is not None:
        return held
    for candidate_id in review_queue_for_user(user=user).values_list("id", flat=True)[:50]:
        with transaction.atomic():
            claimed = Submission.objects.filter(pk=candidate_id, status=SubmissionStatus.QUEUED, claimed_by__isnull=True).update(
                status=SubmissionStatus.CLAIMED, claimed_by=user, claimed_at=timezone.now()
            )
            if claimed:
                submission = Submission.objects.get(pk=candidate_id)
                status_change_record(
                    subject=submission,
                    project_id=submission.project_id,
                    actor=user,
                    from_status=SubmissionStatus.QUEUED,
                    to_status=SubmissionStatus.CLAIMED,
                )
                return submission
    return None


@transaction.atomic
def submission_release(*, submission: Submission, user: User) -> Submission:
    """Hand a claimed item back to the queue (the reviewer cannot finish it)."""
    require_role(membership_get(user=user, project_id=submission.project_id), "review")
    released = Submission.objects.filter(pk=submission.pk, status=SubmissionStatus.CLAIMED, claimed_by=user).update(
        status=SubmissionStatus.QUEUED, claimed_by=None, claimed_at=None
    )
    if not released:
        raise ApplicationError("You are not reviewing this submission.")
    submission.refresh_from_db()
    status_change_record(
        subject=submission,
        project_id=submission.project_id,
        actor=user,
        from_status=SubmissionStatus.CLAIMED,
        to_status=SubmissionStatus.QUEUED,
    )
    return submission


@transaction.atomic
def review_decide(*, submission: Submission, user: User, decision: str, comment: str = "") -> Review:
    membership = membership_get(user=user, project_id=submission.project_id)
    require_role(membership, "review")
    if submission.submitted_by_id == user.pk:
        raise PermissionRefused("You submitted this task: someone else must review it.")
    if decision not in Decision.values:
        raise ApplicationError("Choose 'approve' or 'request changes'.")
    comment = (comment or "").strip()
    if decision == Decision.REQUEST_CHANGES and not comment:
        raise ApplicationError("Say what needs to change: the author will read your comment.")
    if len(comment) > 20_000:
        raise ApplicationError("The comment is too long (20,000 characters at most).")
    submission = Submission.objects.select_for_update().get(pk=submission.pk)
    if submission.status != SubmissionStatus.CLAIMED or submission.claimed_by_id != user.pk:
        raise ApplicationError("Claim this submission from the review queue before deciding on it.")
    to_status = SubmissionStatus.APPROVED if decision == Decision.APPROVE else SubmissionStatus.CHANGES_REQUESTED
    Submission.objects.filter(pk=submission.pk).update(status=to_status, updated_at=timezone.now())
    status_change_record(
        subject=submission, project_id=submission.project_id, actor=user, from_status=submission.status, to_status=to_status, note=comment
    )
    submission.status = to_status
    review = Review.objects.create(submission=submission, reviewer=user, decision=decision, comment=comment)
    task_status = EnvTaskStatus.APPROVED if decision == Decision.APPROVE else EnvTaskStatus.CHANGES_REQUESTED
    env_task_set_status(env_task=submission.env_task, actor=user, to_status=task_status, note=comment)
    return review
