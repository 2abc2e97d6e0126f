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
    judge_endpoint = models.ForeignKey("llm.ModelEndpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                       help_text="Grades this batch's rollouts; the agent's endpoint when empty.")
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
        # A task's batches newest first (the trials tab and the batch list read it in index order).
        indexes = [models.Index(fields=["env_task", "created_at", "id"], name="rollouts_batch_task_list")]

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
    # Refreshed at the claim and before a model call (at most once every 2 s): a running rollout whose heartbeat is
    # older than ROLLOUT_STALE_SECONDS lost its worker and may be claimed again.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Set on the running rollouts of a batch being cancelled: each stops at its next heartbeat. (Read there rather
    # than the batch's cancelled_at: an UPDATE filtered through a join costs the worker five times the CPU.)
    stop_requested = models.BooleanField(default=False)
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
    # Model step: the provider's answer as it came (its JSON, as text), for "Show request and response". The request is
    # not stored: it is rebuilt from the batch and the steps before (a stored conversation per step grows quadratically).
    raw_response = models.TextField(blank=True)
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
        indexes = [models.Index(fields=["step", "created_at", "id"], name="rollouts_stepcomment_list")]

    def __str__(self) -> str:
        return f"Comment on {self.step}"


# --- Grading ------------------------------------------------------------------------------

class GradeStatus(models.TextChoices):
    QUEUED = "queued", "Waiting to be graded"
    RUNNING = "running", "Grading"
    GRADED = "graded", "Graded"
    FAILED = "grading_failed", "Grading failed"
    CANCELLED = "cancelled", "Cancelled"  # by the author (batch_grading_cancel, probe_run_cancel): nothing failed


# Ended without a score: neither counts in pass@k (it says nothing of the task) and Retry sends both
# to the grader again, resuming from the verdicts reached.
GRADE_UNSCORED = (GradeStatus.FAILED, GradeStatus.CANCELLED)


class Grade(models.Model):
    """A rubric version applied to one rollout (or one reward-hacking probe answer)."""

    rollout = models.ForeignKey(Rollout, null=True, blank=True, on_delete=models.CASCADE, related_name="grades")
    probe = models.ForeignKey("rollouts.ProbeAnswer", null=True, blank=True, on_delete=models.CASCADE, related_name="grades")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="grades")
    judge_endpoint = models.ForeignKey("llm.ModelEndpoint", null=True, on_delete=models.SET_NULL, related_name="+")
    judge_endpoint_name = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=16, choices=GradeStatus.choices, default=GradeStatus.QUEUED)
    score = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    met_points = models.IntegerField(default=0)
    positive_points = models.IntegerField(default=0)
    per_tag = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="The last sign of life of the worker running it (core.jobs).")
    graded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["rollout", "rubric_version"], name="one_grade_per_rollout_and_rubric_version"),
            models.UniqueConstraint(fields=["probe", "rubric_version"], name="one_grade_per_probe_and_rubric_version"),
            models.CheckConstraint(
                condition=models.Q(rollout__isnull=False) ^ models.Q(probe__isnull=False), name="grade_of_a_rollout_or_a_probe"
            ),
        ]

    def __str__(self) -> str:
        return f"Grade {self.pk} ({self.status})"


class Verdict(models.Model):
    """One criterion's verdict within a grade, with the judge's samples."""

    grade = models.ForeignKey(Grade, on_delete=models.CASCADE, related_name="verdicts")
    criterion = models.ForeignKey("authoring.Criterion", on_delete=models.CASCADE, related_name="verdicts")
    met = models.BooleanField(null=True, help_text="For a negative criterion: the bad behaviour is present.")
    rationale = models.TextField(blank=True)
    samples = models.JSONField(default=list, blank=True, help_text="[{met, explanation}] per judge sample")
    disagreement = models.FloatField(default=0.0, help_text="Share of samples that disagree with the majority.")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["criterion__position", "id"]
        constraints = [models.UniqueConstraint(fields=["grade", "criterion"], name="one_verdict_per_criterion_per_grade")]

    def __str__(self) -> str:
        return f"Verdict on {self.criterion_id}: {self.met}"


class ExpertVerdict(models.Model):
    """The expert's own call on a criterion for a rollout, where they disagree with the judge."""

    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="expert_verdicts")
    criterion = models.ForeignKey("authoring.Criterion", on_delete=models.CASCADE, related_name="expert_verdicts")
    expert = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    met = models.BooleanField()
    note = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rollout", "criterion", "expert"], name="one_expert_verdict_per_rollout_criterion_expert")
        ]

    def __str__(self) -> str:
        return f"{self.expert_id} says criterion {self.criterion_id} {'met' if self.met else 'not met'} on rollout {self.rollout_id}"


class Ranking(models.Model):
    """An expert's ordering of a batch's trajectories, best first."""

    batch = models.ForeignKey(RolloutBatch, on_delete=models.CASCADE, related_name="rankings")
    expert = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    order = models.JSONField(default=list, help_text="Rollout ids, best first.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch", "expert"], name="one_ranking_per_batch_and_expert")]

    def __str__(self) -> str:
        return f"Ranking of batch {self.batch_id} by {self.expert_id}"


class ProbeRunStatus(models.TextChoices):
    """Where the run's model-written cheats are. A run without a cheat model is ready at once."""

    QUEUED = "queued", "Waiting to write the cheat answers"
    WRITING = "writing", "Writing the cheat answers"
    READY = "ready", "Every probe queued for grading"
    FAILED = "failed", "The cheat answers could not be written"


class ProbeRun(models.Model):
    """A suite of adversarial answers graded against one rubric version. The built-in probes
    are created with the run; the cheats a model writes are a job of their own on the
    `grading` queue (verification.services.probe_run_write_cheats), claimed like any job
    (core.jobs: status, attempts, started_at, heartbeat_at, finished_at, error)."""

    env_task = models.ForeignKey(EnvTask, on_delete=models.CASCADE, related_name="probe_runs")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="probe_runs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    judge_endpoint = models.ForeignKey("llm.ModelEndpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                       help_text="Grades every probe, the model-written cheats too.")
    cheat_endpoint = models.ForeignKey("llm.ModelEndpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                       help_text="Writes cheats aimed at the rubric; none: only the built-in probes.")
    status = models.CharField(max_length=16, choices=ProbeRunStatus.choices, default=ProbeRunStatus.READY)
    cheats_per_kind = models.PositiveSmallIntegerField(
        default=2, help_text="How many cheats the cheat model writes for each kind of probe."
    )
    flag_score = models.FloatField(
        default=0.5, help_text="A probe scoring this or more (or passing) is flagged; kept with the run so its flags never change."
    )
    error = models.TextField(blank=True, help_text="Why the cheats could not be written, for the author.")
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Probe run {self.pk}"


class ProbeAnswer(models.Model):
    run = models.ForeignKey(ProbeRun, on_delete=models.CASCADE, related_name="answers")
    kind = models.CharField(max_length=40)
    label = models.CharField(max_length=200)
    answer = models.TextField()
    detail = models.JSONField(default=dict, blank=True, help_text="What the probe was built from: the fact it hedges on or gets wrong "
                              "({fact, wrong, fact_kind}), or the kind a model-written cheat aims at ({aimed_at}).")

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"Probe {self.label}"
