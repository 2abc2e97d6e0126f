from django.conf import settings
from django.db import models

from accounts.models import Project
from authoring.models import EnvTask, RubricVersion
from core.models import TimeStampedModel


class SubmissionStatus(models.TextChoices):
    QUEUED = "queued", "Waiting for a reviewer"
    CLAIMED = "claimed", "Being reviewed"
    APPROVED = "approved", "Approved"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"


class Submission(TimeStampedModel):
    """An immutable task version sent to QA: the snapshot never changes after creation."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="submissions")
    env_task = models.ForeignKey(EnvTask, on_delete=models.CASCADE, related_name="submissions")
    number = models.PositiveIntegerField(help_text="The task's version number: 1 for its first submission.")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="submissions")
    snapshot = models.JSONField()
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=24, choices=SubmissionStatus.choices, default=SubmissionStatus.QUEUED)
    claimed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    claimed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["env_task", "number"], name="unique_submission_number")]

    def __str__(self) -> str:
        return f"{self.snapshot['task']['title']} v{self.number}"

    @property
    def title(self) -> str:
        return self.snapshot["task"]["title"]


class Decision(models.TextChoices):
    APPROVE = "approve", "Approve"
    REQUEST_CHANGES = "request_changes", "Request changes"


class Review(TimeStampedModel):
    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="review")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    decision = models.CharField(max_length=24, choices=Decision.choices)
    comment = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"{self.get_decision_display()} on {self.submission}"
