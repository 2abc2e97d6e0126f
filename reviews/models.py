"""QA: submissions (immutable task versions), the project's review policy and checklist,
reviews with their checklist answers, adjudications, anchored comments, the audit trail
and in-app notifications. Writes are in reviews.services, reads in reviews.selectors."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import Project
from authoring.models import Criterion, Document, EnvTask, RubricVersion
from core.models import TimeStampedModel


class SubmissionStatus(models.TextChoices):
    QUEUED = "queued", "Waiting for a reviewer"
    CLAIMED = "claimed", "Being reviewed"
    ADJUDICATION = "adjudication", "Reviewers disagree: waiting for an admin"
    APPROVED = "approved", "Approved"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    WITHDRAWN = "withdrawn", "Withdrawn by the author"


class Submission(TimeStampedModel):
    """An immutable task version sent to QA: the snapshot never changes after creation."""

    OPEN_STATUSES = (SubmissionStatus.QUEUED, SubmissionStatus.CLAIMED, SubmissionStatus.ADJUDICATION)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="submissions")
    env_task = models.ForeignKey(EnvTask, on_delete=models.CASCADE, related_name="submissions")
    number = models.PositiveIntegerField(help_text="The task's version number: 1 for its first submission.")
    # Copied from the snapshot at creation, so lists never read the snapshot (it holds the whole world).
    title = models.CharField(max_length=200, default="")
    author_note = models.TextField(blank=True, help_text="What the author wants the reviewers to know.")
    approvals_required = models.PositiveSmallIntegerField(default=1, help_text="The project's policy when this version was submitted.")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="submissions")
    snapshot = models.JSONField()
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=24, choices=SubmissionStatus.choices, default=SubmissionStatus.QUEUED)
    claimed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    claimed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["env_task", "number"], name="unique_submission_number")]
        indexes = [
            models.Index(fields=["status", "created_at", "id"], name="submission_queue"),
            models.Index(fields=["project", "status", "created_at"], name="submission_project_status"),
            models.Index(fields=["project", "created_at", "id"], name="submission_project_created"),  # the API's list
        ]

    def __str__(self) -> str:
        return f"{self.title} v{self.number}"

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN_STATUSES


class ReviewPolicy(TimeStampedModel):
    """How a project runs QA: how many approvals a submission needs, which gates an author
    must pass before submitting, and when reviewers are told the queue is long. A project
    without a row uses the defaults (reviews.selectors.review_policy_for_project)."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="review_policy")
    approvals_required = models.PositiveSmallIntegerField(default=1)
    gate_graded_rollouts = models.BooleanField(default=False)
    min_graded_rollouts = models.PositiveIntegerField(default=8)
    gate_probes = models.BooleanField(default=False)
    gate_difficulty = models.BooleanField(default=False)
    pass1_ceiling = models.FloatField(default=0.9, help_text="pass@1 must be below this for the task to be learnable.")
    passk_floor = models.FloatField(default=0.1, help_text="pass@k (the largest k measured) must be above this.")
    queue_alert_threshold = models.PositiveIntegerField(default=10, help_text="Tell reviewers when this many wait (0: never).")

    def __str__(self) -> str:
        return f"Review policy of {self.project}"


class ChecklistItem(TimeStampedModel):
    """One question every reviewer of the project answers (pass/fail + note). Retired items
    stay for the answers given to them; answers also keep the text they were given for."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="checklist_items")
    text = models.CharField(max_length=300)
    position = models.PositiveIntegerField(default=0)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.text


class Decision(models.TextChoices):
    APPROVE = "approve", "Approve"
    REQUEST_CHANGES = "request_changes", "Request changes"


# A decision once made, as a result reads ("Approved by …"); the labels above are the choices.
DECISION_DONE = {Decision.APPROVE: "Approved", Decision.REQUEST_CHANGES: "Changes requested"}


class DecidedMixin:
    @property
    def decision_done(self) -> str:
        return DECISION_DONE.get(self.decision, self.decision)


class Review(DecidedMixin, TimeStampedModel):
    """One reviewer's decision on one submission; a submission gets one per required approval."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    decision = models.CharField(max_length=24, choices=Decision.choices)
    comment = models.TextField(blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True, help_text="When the reviewer took the submission.")

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["submission", "reviewer"], name="one_review_per_reviewer")]
        indexes = [models.Index(fields=["reviewer", "created_at"], name="review_by_reviewer")]

    def __str__(self) -> str:
        return f"{self.decision_done} on {self.submission}"


class ChecklistAnswer(models.Model):
    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="answers")
    item = models.ForeignKey(ChecklistItem, null=True, on_delete=models.SET_NULL, related_name="answers")
    item_text = models.CharField(max_length=300)
    passed = models.BooleanField()
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["review", "item"], name="one_answer_per_item")]

    def __str__(self) -> str:
        return f"{'Pass' if self.passed else 'Fail'}: {self.item_text}"


class Adjudication(DecidedMixin, TimeStampedModel):
    """An admin's final decision on a submission whose reviewers disagreed."""

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="adjudication")
    admin = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    decision = models.CharField(max_length=24, choices=Decision.choices)
    note = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"Adjudicated: {self.decision_done} on {self.submission}"


class ProbeExplanation(TimeStampedModel):
    """The author's word on a flagged reward-hacking probe (why it is not a hole), which
    clears the probe gate for that probe."""

    probe = models.OneToOneField("rollouts.ProbeAnswer", on_delete=models.CASCADE, related_name="explanation")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    note = models.TextField()

    def __str__(self) -> str:
        return f"Explanation of probe {self.probe_id}"


class CommentAnchor(models.TextChoices):
    TASK = "task", "The task"
    PROMPT = "prompt", "Prompt"
    REFERENCE = "reference", "Reference answer"
    CRITERION = "criterion", "Rubric criterion"
    DOCUMENT = "document", "Document"
    STEP = "step", "Trajectory step"


class ReviewComment(TimeStampedModel):
    """A QA comment anchored where it belongs. The anchor's words (criterion text, document
    path, quoted passage) are kept with it, so it still reads right after the criterion or
    document changed; the foreign keys are for linking, and may go."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    env_task = models.ForeignKey(EnvTask, on_delete=models.CASCADE, related_name="review_comments")
    submission = models.ForeignKey(Submission, null=True, blank=True, on_delete=models.SET_NULL, related_name="comments",
                                   help_text="The version the comment was made on.")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    body = models.TextField()
    anchor = models.CharField(max_length=16, choices=CommentAnchor.choices, default=CommentAnchor.TASK)
    criterion = models.ForeignKey(Criterion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    criterion_text = models.TextField(blank=True)
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    document_path = models.CharField(max_length=500, blank=True)
    quote = models.TextField(blank=True, help_text="The passage of the document the comment is about.")
    step = models.ForeignKey("rollouts.Step", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["env_task", "resolved_at"], name="comment_task_open")]

    def __str__(self) -> str:
        return f"Comment on {self.get_anchor_display().lower()} of task {self.env_task_id}"


class AuditVerb(models.TextChoices):
    SUBMITTED = "submitted", "Submitted"
    WITHDRAWN = "withdrawn", "Withdrew"
    CLAIMED = "claimed", "Claimed"
    RELEASED = "released", "Released"
    CLAIM_EXPIRED = "claim_expired", "Claim expired"
    CHECKLIST = "checklist", "Answered the checklist"
    REVIEWED = "reviewed", "Reviewed"
    ADJUDICATION_NEEDED = "adjudication_needed", "Sent to adjudication"
    ADJUDICATED = "adjudicated", "Adjudicated"
    APPROVED = "approved", "Approved"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    COMMENTED = "commented", "Commented"
    COMMENT_RESOLVED = "comment_resolved", "Resolved a comment"
    COMMENT_REOPENED = "comment_reopened", "Reopened a comment"
    PROBE_EXPLAINED = "probe_explained", "Explained a probe"
    POLICY_CHANGED = "policy_changed", "Changed the review policy"
    CHECKLIST_CHANGED = "checklist_changed", "Changed the checklist"
    MEMBERS_CHANGED = "members_changed", "Changed the members"
    PACK_IMPORTED = "pack_imported", "Imported a pack"
    TASK_DELETED = "task_deleted", "Deleted a task"
    WORLD_DELETED = "world_deleted", "Deleted a world"


class AuditEvent(models.Model):
    """One line of the audit trail. Rows are only ever added (no service updates or
    deletes one). Rubric and document versions are read from their own immutable tables
    and merged into the timeline by reviews.selectors.audit_timeline."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    env_task = models.ForeignKey(EnvTask, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_events")
    submission = models.ForeignKey(Submission, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    verb = models.CharField(max_length=24, choices=AuditVerb.choices)
    summary = models.CharField(max_length=500)
    data = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            models.Index(fields=["env_task", "at"], name="audit_task_at"),
            models.Index(fields=["project", "at"], name="audit_project_at"),
        ]

    def __str__(self) -> str:
        return f"{self.get_verb_display()}: {self.summary}"


class Notification(models.Model):
    """An in-app notice (the bell); the same text goes out by email where the user has one."""

    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    text = models.CharField(max_length=300)
    url = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["recipient", "read_at"], name="notification_unread"),
            models.Index(fields=["recipient", "created_at", "id"], name="notification_recipient_at"),  # the bell's list
        ]

    def __str__(self) -> str:
        return self.text
