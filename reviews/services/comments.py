"""Anchored QA comments: add one (on the task, its prompt or reference answer, a rubric
criterion, a document and a passage of it, or a trajectory step), reply in its thread,
resolve and reopen the thread. Any member of the project may comment; resolving is for
the task's authors, the project's reviewers and admins. Every write leaves its audit line
and tells the people who need to know (never the commenter)."""

import re

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from accounts.models import Membership, User
from accounts.selectors import membership_get
from authoring.models import Criterion, Document, EnvTask
from core.exceptions import ApplicationError, PermissionRefused
from reviews.models import AuditVerb, CommentAnchor, ReviewComment, Submission
from reviews.services.audit import audit_record
from reviews.services.notifications import notify
from rollouts.models import Step

MAX_BODY = 20_000
MAX_QUOTE = 2_000
_MARKUP = re.compile(r"[*_`#>|~\\]")


def _squash(text: str) -> str:
    return " ".join(text.split())


def quote_occurs(quote: str, content: str) -> bool:
    """A passage pasted from the document occurs in it: compared with whitespace collapsed,
    and (pasted from the rendered view) also without markdown's emphasis and heading marks."""
    if _squash(quote) in _squash(content):
        return True
    return _squash(_MARKUP.sub("", quote)) in _squash(_MARKUP.sub("", content))


def task_author_ids(env_task: EnvTask) -> set[int]:
    """Who authored the task: its creator and whoever submitted a version of it."""
    ids = set(Submission.objects.filter(env_task_id=env_task.pk).exclude(submitted_by=None).values_list("submitted_by_id", flat=True))
    if env_task.created_by_id:
        ids.add(env_task.created_by_id)
    return ids


def can_resolve(*, membership: Membership, env_task: EnvTask, comment: ReviewComment | None = None) -> bool:
    """Reviewers and admins resolve any thread; an author resolves threads on their own task
    (and whoever wrote the thread's first comment may close it)."""
    if membership.can_review:
        return True
    if comment is not None and comment.author_id == membership.user_id:
        return True
    return membership.user_id in task_author_ids(env_task)


def _body(body: str) -> str:
    body = (body or "").strip()
    if not body:
        raise ApplicationError("Write the comment first.")
    if len(body) > MAX_BODY:
        raise ApplicationError(f"A comment holds at most {MAX_BODY:,} characters (this one has {len(body):,}).")
    return body


def _anchor_fields(env_task: EnvTask, anchor: str, criterion: Criterion | None, document: Document | None, quote: str,
                   step: Step | None) -> dict:
    """Check that the anchored object is this task's, and return the fields that keep its words."""
    if anchor not in CommentAnchor.values:
        raise ApplicationError(f"Unknown place to comment on: {str(anchor)[:40]!r}.")
    given = {"criterion": criterion, "document": document, "step": step}
    wanted = {CommentAnchor.CRITERION: "criterion", CommentAnchor.DOCUMENT: "document", CommentAnchor.STEP: "step"}.get(anchor)
    stray = [name for name, value in given.items() if value is not None and name != wanted]
    if stray:
        raise ApplicationError(f"A comment on the {CommentAnchor(anchor).label.lower()} is not also about a {stray[0]}.")
    quote = (quote or "").strip()
    if quote and anchor != CommentAnchor.DOCUMENT:
        raise ApplicationError("Only a comment on a document quotes a passage.")
    fields: dict = {"anchor": anchor}
    if anchor == CommentAnchor.CRITERION:
        if criterion is None:
            raise ApplicationError("Choose the rubric criterion the comment is about.")
        if not Criterion.objects.filter(pk=criterion.pk, rubric_version__env_task_id=env_task.pk).exists():
            raise ApplicationError("That criterion belongs to another task's rubric.")
        fields |= {"criterion": criterion, "criterion_text": criterion.text}
    elif anchor == CommentAnchor.DOCUMENT:
        if document is None:
            raise ApplicationError("Choose the document the comment is about.")
        if document.world_id != env_task.world_id:
            raise ApplicationError("That document is not in this task's world.")
        if len(quote) > MAX_QUOTE:
            raise ApplicationError(f"Quote at most {MAX_QUOTE:,} characters of the document (this passage has {len(quote):,}).")
        if quote and not quote_occurs(quote, document.content):
            raise ApplicationError("The quoted passage is not in the document. Paste it exactly as the document says it.")
        fields |= {"document": document, "document_path": document.path, "quote": quote}
    elif anchor == CommentAnchor.STEP:
        if step is None:
            raise ApplicationError("Choose the trajectory step the comment is about.")
        if not Step.objects.filter(pk=step.pk, rollout__batch__env_task_id=env_task.pk).exists():
            raise ApplicationError("That step is from a rollout of another task.")
        fields |= {"step": step}
    return fields


def _where(comment: ReviewComment) -> str:
    if comment.anchor == CommentAnchor.CRITERION:
        return f"criterion “{comment.criterion_text[:80]}”"
    if comment.anchor == CommentAnchor.DOCUMENT:
        return f"document {comment.document_path}"
    if comment.anchor == CommentAnchor.STEP:
        return "a trajectory step"
    if comment.anchor == CommentAnchor.TASK:
        return "the task"
    return f"the {comment.get_anchor_display().lower()}"


def _link(comment: ReviewComment) -> str:
    return reverse("task-comments", args=[comment.env_task_id]) + f"#comment-{comment.parent_id or comment.pk}"


@transaction.atomic
def comment_add(*, env_task: EnvTask, user: User, body: str, anchor: str = CommentAnchor.TASK, criterion: Criterion | None = None,
                document: Document | None = None, quote: str = "", step: Step | None = None, submission: Submission | None = None,
                parent: ReviewComment | None = None) -> ReviewComment:
    """A new thread on the anchor, or (with `parent`) a reply in the parent's thread, which
    takes the thread's anchor whatever else is given."""
    membership = membership_get(user=user, project_id=env_task.project_id)
    body = _body(body)
    if parent is not None:
        if parent.env_task_id != env_task.pk:
            raise ApplicationError("That comment is on another task.")
        root = parent if parent.parent_id is None else parent.parent  # threads are one level deep
        fields = {"anchor": root.anchor, "criterion_id": root.criterion_id, "criterion_text": root.criterion_text,
                  "document_id": root.document_id, "document_path": root.document_path, "quote": root.quote, "step_id": root.step_id}
        submission = submission or root.submission
    else:
        root = None
        fields = _anchor_fields(env_task, anchor, criterion, document, quote, step)
    if submission is not None and submission.env_task_id != env_task.pk:
        raise ApplicationError("That submission is a version of another task.")
    comment = ReviewComment.objects.create(project_id=env_task.project_id, env_task=env_task, submission=submission, parent=root,
                                           author=user, body=body, **fields)
    where = _where(comment)
    audit_record(project_id=env_task.project_id, env_task_id=env_task.pk, submission=submission, actor=user, verb=AuditVerb.COMMENTED,
                 summary=f"{'Replied on' if root else 'Commented on'} {where}: {body[:200]}",
                 data={"comment": comment.pk, "thread": root.pk if root else comment.pk, "anchor": comment.anchor, "body": body})
    recipients: set[int] = set()
    if membership.can_review:
        recipients |= task_author_ids(env_task)
    if root is not None:
        recipients |= set(ReviewComment.objects.filter(pk=root.pk).exclude(author=None).values_list("author_id", flat=True))
        recipients |= set(root.replies.exclude(author=None).values_list("author_id", flat=True))
    recipients.discard(user.pk)
    if recipients:
        people = User.objects.filter(pk__in=recipients, is_active=True, memberships__project_id=env_task.project_id)
        verb = "replied" if root else "commented"
        notify(recipients=people, project_id=env_task.project_id, url=_link(comment),
               text=f"{user.username} {verb} on {where} of “{env_task.title}”: {body[:120]}")
    return comment


def _thread_root(comment: ReviewComment) -> ReviewComment:
    root_id = comment.parent_id or comment.pk
    return ReviewComment.objects.select_for_update().select_related("env_task").get(pk=root_id)


def _may_resolve(user: User, root: ReviewComment, doing: str) -> None:
    membership = membership_get(user=user, project_id=root.project_id)
    if not can_resolve(membership=membership, env_task=root.env_task, comment=root):
        raise PermissionRefused(f"Only the task's authors, reviewers and admins {doing} a comment thread.")


@transaction.atomic
def comment_resolve(*, comment: ReviewComment, user: User) -> ReviewComment:
    """Resolve the thread (resolving a reply resolves its thread). Already resolved: nothing changes."""
    root = _thread_root(comment)
    _may_resolve(user, root, "resolve")
    if root.resolved_at is not None:
        return root
    root.resolved_at, root.resolved_by = timezone.now(), user
    root.save(update_fields=["resolved_at", "resolved_by", "updated_at"])
    audit_record(project_id=root.project_id, env_task_id=root.env_task_id, submission=root.submission, actor=user,
                 verb=AuditVerb.COMMENT_RESOLVED, summary=f"Resolved the comment on {_where(root)}: {root.body[:200]}",
                 data={"thread": root.pk})
    if root.author_id and root.author_id != user.pk:
        notify(recipients=[root.author], project_id=root.project_id, url=_link(root),
               text=f"{user.username} resolved your comment on {_where(root)} of “{root.env_task.title}”.")
    return root


@transaction.atomic
def comment_reopen(*, comment: ReviewComment, user: User) -> ReviewComment:
    """Open a resolved thread again. Already open: nothing changes."""
    root = _thread_root(comment)
    _may_resolve(user, root, "reopen")
    if root.resolved_at is None:
        return root
    root.resolved_at, root.resolved_by = None, None
    root.save(update_fields=["resolved_at", "resolved_by", "updated_at"])
    audit_record(project_id=root.project_id, env_task_id=root.env_task_id, submission=root.submission, actor=user,
                 verb=AuditVerb.COMMENT_REOPENED, summary=f"Reopened the comment on {_where(root)}: {root.body[:200]}",
                 data={"thread": root.pk})
    return root
