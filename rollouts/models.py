from decimal import Decimal

from django.conf import settings
from django.db import models

from authoring.models import EnvTask, RubricVersion
from core.models import TimeStampedModel
from workspace.models import Overlay

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful professional working inside a company's systems. You can use tools to read "
    "and search the files, email, chat and calendar of this engagement, and to write files, send "
    "email, post messages and create events. Base every statement on what you find. When you are "
    "done, reply with your final answer and no tool call."
)


class BatchMode(models.TextChoices):
    TOOLS = "tools", "Agent with the world's tools"
    NO_TOOLS = "no_tools", "No tools (baseline: answer from the prompt alone)"


class RolloutBatch(TimeStampedModel):
    """N trial runs of one frozen task version on one endpoint."""

    env_task = models.ForeignKey(EnvTask, on_delete=models.CASCADE, related_name="rollout_batches")
    project_id = models.PositiveBigIntegerField(db_index=True)
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="rollout_batches")
    task_snapshot = models.JSONField(help_text="The task as it was when the batch started: title, prompt, deliverable.")
    endpoint = models.ForeignKey("llm.ModelEndpoint", null=True, on_delete=models.SET_NULL, related_name="+")
    endpoint_name = models.CharField(max_length=100)
    endpoint_scripted = models.BooleanField(default=False)
    mode = models.CharField(max_length=16, choices=BatchMode.choices, default=BatchMode.TOOLS)
    n = models.PositiveSmallIntegerField()
    temperature = models.FloatField(null=True, blank=True)
    max_steps = models.PositiveSmallIntegerField(default=20)
    max_output_tokens = models.PositiveIntegerField(default=4096)
    time_limit_seconds = models.PositiveIntegerField(default=600)
    system_prompt = models.TextField(default=DEFAULT_SYSTEM_PROMPT)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Batch {self.pk} of {self.task_snapshot.get('title', '')}"


class RolloutStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class Rollout(models.Model):
    """One trajectory: the agent's attempt at the task, step by step."""

    FINISHED = (RolloutStatus.COMPLETED, RolloutStatus.FAILED, RolloutStatus.CANCELLED)

    batch = models.ForeignKey(RolloutBatch, on_delete=models.CASCADE, related_name="rollouts")
    index = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=RolloutStatus.choices, default=RolloutStatus.QUEUED)
    reason = models.TextField(blank=True, help_text="Why it ended the way it did, for the author.")
    overlay = models.ForeignKey(Overlay, null=True, blank=True, on_delete=models.SET_NULL, related_name="rollouts")
    final_answer = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal("0"))
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["batch", "index"]
        constraints = [models.UniqueConstraint(fields=["batch", "index"], name="unique_rollout_index_per_batch")]

    def __str__(self) -> str:
        return f"Rollout {self.index + 1} of batch {self.batch_id}"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED


class StepKind(models.TextChoices):
    MODEL = "model", "Model message"
    TOOL = "tool", "Tool call"


class Step(models.Model):
    """One model message or one tool call of a rollout, written as it happens."""

    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    kind = models.CharField(max_length=8, choices=StepKind.choices)
    text = models.TextField(blank=True, help_text="Model text, or the tool's result.")
    tool_calls = models.JSONField(default=list, blank=True, help_text="Model step: [{id, name, arguments, raw_arguments}]")
    tool_call_id = models.CharField(max_length=200, blank=True)
    tool_name = models.CharField(max_length=100, blank=True)
    arguments = models.JSONField(null=True, blank=True)
    is_error = models.BooleanField(default=False)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal("0"))
    latency_ms = models.PositiveIntegerField(default=0)
    finish_reason = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rollout", "index"]
        constraints = [models.UniqueConstraint(fields=["rollout", "index"], name="unique_step_index_per_rollout")]

    def __str__(self) -> str:
        return f"Step {self.index} ({self.kind}) of rollout {self.rollout_id}"


class StepComment(models.Model):
    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"Comment on {self.step}"
