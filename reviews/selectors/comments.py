"""Reads of the anchored QA comments, scoped by membership. A thread is a root comment and
its replies (one level deep); every list reads the roots in one query and their replies in
one more, whatever the number of threads."""

from dataclasses import dataclass

from django.db.models import Prefetch, Q, QuerySet
from django.shortcuts import get_object_or_404

from accounts.models import User
from accounts.selectors import project_list_for_user
from authoring.models import Criterion, Document, EnvTask
from authoring.selectors import rubric_version_current
from reviews.models import CommentAnchor, ReviewComment, Submission
from reviews.selectors.queue import submission_previous
from rollouts.models import Step

MAX_THREADS = 500  # a list never reads more than this many threads at once


@dataclass(frozen=True)
class CommentFilter:
    """Which comments of a task to show: one anchor (and its object), open ones only."""

    anchor: str | None = None
    criterion: Criterion | None = None
    document: Document | None = None
    step: Step | None = None
    open_only: bool = False


def _threads(qs: QuerySet[ReviewComment]) -> QuerySet[ReviewComment]:
    replies = ReviewComment.objects.select_related("author").order_by("created_at", "id")
    return (qs.filter(parent=None)
            .select_related("author", "resolved_by", "submission", "criterion__rubric_version", "step__rollout")
            .defer("submission__snapshot")
            .prefetch_related(Prefetch("replies", queryset=replies))
            .order_by("created_at", "id"))


def comment_threads_for_task(*, user: User, env_task: EnvTask, where: CommentFilter | None = None) -> QuerySet[ReviewComment]:
    """The task's threads (root comments with their replies prefetched), oldest first.

    On a criterion, a thread shows on every rubric version's criterion with the same words
    (the comment made on version 2's criterion still shows on version 3's identical one);
    on a document, also when the document was since deleted (by its path)."""
    where = where or CommentFilter()
    qs = ReviewComment.objects.filter(env_task=env_task, project__in=project_list_for_user(user=user))
    if where.anchor:
        qs = qs.filter(anchor=where.anchor)
    if where.anchor == CommentAnchor.CRITERION and where.criterion is not None:
        qs = qs.filter(Q(criterion=where.criterion) | Q(criterion_text=where.criterion.text))
    elif where.anchor == CommentAnchor.DOCUMENT and where.document is not None:
        qs = qs.filter(Q(document=where.document) | Q(document=None, document_path=where.document.path))
    elif where.anchor == CommentAnchor.STEP and where.step is not None:
        qs = qs.filter(step=where.step)
    if where.open_only:
        qs = qs.filter(resolved_at=None)
    return _threads(qs)


def comments_open_for_task(*, user: User, env_task: EnvTask) -> QuerySet[ReviewComment]:
    return comment_threads_for_task(user=user, env_task=env_task, where=CommentFilter(open_only=True))


def comment_get_for_user(*, user: User, pk: int) -> ReviewComment:
    """One comment, 404 outside the user's projects."""
    return get_object_or_404(
        ReviewComment.objects.filter(project__in=project_list_for_user(user=user)).select_related("env_task", "env_task__world"), pk=pk
    )


def comments_resolved_since_previous(*, user: User, submission: Submission) -> QuerySet[ReviewComment]:
    """The threads of the submission's task resolved between the previous version's
    submission and this one: what the author settled before resubmitting. Empty for a
    first version."""
    previous = submission_previous(submission=submission)
    if previous is None:
        return ReviewComment.objects.none()
    qs = ReviewComment.objects.filter(env_task_id=submission.env_task_id, project__in=project_list_for_user(user=user),
                                      resolved_at__gt=previous.created_at, resolved_at__lte=submission.created_at)
    return _threads(qs)


def anchor_objects_for_task(*, env_task: EnvTask, criterion_id: int | None = None, document_id: int | None = None,
                            step_id: int | None = None) -> dict:
    """The criterion, document and step the ids name, each only if it is this task's (a
    criterion of any of its rubric versions, a document of its world, a step of its
    rollouts); an id of anything else reads as missing (None)."""
    found: dict = {"criterion": None, "document": None, "step": None}
    if criterion_id:
        found["criterion"] = Criterion.objects.filter(pk=criterion_id, rubric_version__env_task_id=env_task.pk).first()
    if document_id:
        found["document"] = Document.objects.filter(pk=document_id, world_id=env_task.world_id).first()
    if step_id:
        found["step"] = (Step.objects.filter(pk=step_id, rollout__batch__env_task_id=env_task.pk).select_related("rollout")
                         .defer("raw_response").first())
    return found


def current_criterion_ids_by_text(*, env_task: EnvTask) -> dict[str, int]:
    """{criterion text: its id} in the task's current rubric version, to link a comment made
    on an earlier version's criterion to the same words today."""
    rubric = rubric_version_current(env_task=env_task)
    if rubric is None:
        return {}
    return {text: pk for pk, text in rubric.criteria.values_list("pk", "text")}
