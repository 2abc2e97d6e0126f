from django.conf import settings
from django.db import models

from accounts.models import Project
from core.models import TimeStampedModel


class World(TimeStampedModel):
    """Scenario outline + facts sheet + data room. Many tasks share one world."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="worlds")
    title = models.CharField(max_length=200)
    outline = models.TextField(blank=True, help_text="The scenario, in markdown.")
    facts = models.JSONField(default=list, blank=True, help_text='[{"key": ..., "value": ...}, ...]')
    # Bumped on every save; a save based on an older revision is refused (no silent overwrite).
    revision = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["title", "id"]
        indexes = [models.Index(fields=["project", "title", "id"], name="world_project_title")]  # the worlds list

    def __str__(self) -> str:
        return self.title


class DocumentKind(models.TextChoices):
    FILE = "file", "File"
    EMAIL = "email", "Email"
    CHAT = "chat", "Chat message"
    EVENT = "event", "Calendar event"


class DocumentFormat(models.TextChoices):
    DOCX = "docx", "Word (docx)"
    XLSX = "xlsx", "Excel (xlsx)"
    PPTX = "pptx", "PowerPoint (pptx)"
    PDF = "pdf", "PDF"
    MD = "md", "Markdown"
    CSV = "csv", "CSV"


class DocumentStatus(models.TextChoices):
    SKELETON = "skeleton", "Skeleton"
    DRAFTED = "drafted", "Drafted"
    EDITED = "edited", "Edited"
    LOCKED = "locked", "Locked"


class Document(TimeStampedModel):
    """One data-room item. Starts as a skeleton line and gets content later."""

    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="documents")
    path = models.CharField(max_length=500, help_text="Where it sits in the data room, e.g. Deal/LOI.docx")
    kind = models.CharField(max_length=16, choices=DocumentKind.choices, default=DocumentKind.FILE)
    format = models.CharField(max_length=8, choices=DocumentFormat.choices, blank=True)
    brief = models.TextField(blank=True, help_text="What this document says, for the drafter.")
    metadata = models.JSONField(default=dict, blank=True, help_text="from, to, cc, date, subject, channel, attendees …")
    target_size = models.PositiveIntegerField(default=300, help_text="Target length in words.")
    content = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=DocumentStatus.choices, default=DocumentStatus.SKELETON)
    position = models.PositiveIntegerField(default=0)
    revision = models.PositiveIntegerField(default=1)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    # An uploaded original, kept as it came (served only as an attachment); `content`
    # holds the text extracted from it.
    source_file = models.FileField(upload_to="uploads/%Y/%m/", blank=True)
    source_name = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["world", "path"], name="unique_document_path_per_world")]
        indexes = [models.Index(fields=["world", "position", "id"], name="document_world_position")]  # the data room's order

    def __str__(self) -> str:
        return self.path

    @property
    def folder(self) -> str:
        return self.path.rpartition("/")[0]

    @property
    def name(self) -> str:
        return self.path.rpartition("/")[2]


class VersionSource(models.TextChoices):
    DRAFTED = "drafted", "Drafted by a model"
    EDITED = "edited", "Edited by hand"
    UPLOADED = "uploaded", "Uploaded"
    RESTORED = "restored", "Restored"


class DocumentVersion(models.Model):
    """Every saved state of a document's content, so no earlier version is ever lost."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    content = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=16, choices=VersionSource.choices)
    note = models.CharField(max_length=500, blank=True, help_text="e.g. the redraft instruction, or the model used")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document", "-number"]
        constraints = [models.UniqueConstraint(fields=["document", "number"], name="unique_document_version_number")]

    def __str__(self) -> str:
        return f"{self.document} v{self.number}"


class DeliverableKind(models.TextChoices):
    ANSWER = "answer", "Written answer"
    DOCX = "docx", "Word document"
    XLSX = "xlsx", "Spreadsheet"
    PPTX = "pptx", "Slide deck"
    EMAIL = "email", "Email sent"


class EnvTaskStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    IN_REVIEW = "in_review", "In review"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    APPROVED = "approved", "Approved"
    ARCHIVED = "archived", "Archived"


class EnvTask(TimeStampedModel):
    """A prompt on a world plus its verifier (named so to never clash with a Celery task)."""

    EDITABLE_STATUSES = (EnvTaskStatus.DRAFT, EnvTaskStatus.CHANGES_REQUESTED)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="env_tasks")
    world = models.ForeignKey(World, on_delete=models.PROTECT, related_name="env_tasks")
    title = models.CharField(max_length=200)
    prompt = models.TextField(blank=True)
    deliverable_kind = models.CharField(max_length=16, choices=DeliverableKind.choices, default=DeliverableKind.ANSWER)
    reference_answer = models.TextField(blank=True)
    status = models.CharField(max_length=24, choices=EnvTaskStatus.choices, default=EnvTaskStatus.DRAFT)
    revision = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        # Newest first, ties newest first too: one direction for every column, so that one
        # index serves this order (scanned backwards) and its reverse (forwards).
        ordering = ["-updated_at", "-id"]
        indexes = [  # the API's order, the project page's sorts and status filter (authoring/views/project.py)
            models.Index(fields=["project", "updated_at", "id"], name="envtask_project_updated"),
            models.Index(fields=["project", "title", "id"], name="envtask_project_title"),
            models.Index(fields=["project", "status", "updated_at", "id"], name="envtask_project_status"),
            models.Index(fields=["created_by", "updated_at", "id"], name="envtask_author_updated"),  # the dashboard's drafts
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_editable(self) -> bool:
        return self.status in self.EDITABLE_STATUSES


class TaskInputFile(TimeStampedModel):
    """A file the agent receives with one task, laid over its world's files at `path`
    (a spreadsheet the prompt asks about, say). The bytes are stored once under
    `task-files/<sha256>` and never changed or deleted there, so a frozen task version
    (which names its files by sha256) keeps pointing at the bytes it was approved with.
    `content` is the text the agent's tools read, extracted from the bytes on upload."""

    env_task = models.ForeignKey(EnvTask, on_delete=models.CASCADE, related_name="input_files")
    path = models.CharField(max_length=500, help_text="Where the agent finds it, e.g. Inputs/Q3 figures.xlsx")
    file = models.FileField(max_length=300)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    format = models.CharField(max_length=8, choices=DocumentFormat.choices)
    content = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["path", "id"]
        constraints = [models.UniqueConstraint(fields=["env_task", "path"], name="unique_input_file_path_per_task")]

    def __str__(self) -> str:
        return self.path


class RubricVersion(TimeStampedModel):
    """A numbered version of a task's rubric. Once frozen (submitted, or used to grade)
    it never changes again; the next edit starts a new version."""

    env_task = models.ForeignKey(EnvTask, on_delete=models.CASCADE, related_name="rubric_versions")
    number = models.PositiveIntegerField()
    frozen_at = models.DateTimeField(null=True, blank=True)
    # How grades are computed: versioned with the criteria, so a grade always says which rules made it.
    pass_threshold = models.FloatField(default=0.7, help_text="A score at or above this passes (0–1).")
    all_must_pass = models.BooleanField(default=False, help_text="Pass only if every positive criterion is met and no pitfall is.")
    judge_samples = models.PositiveSmallIntegerField(default=1, help_text="LLM-judge samples per criterion; the majority decides.")
    revision = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["env_task", "-number"]
        constraints = [models.UniqueConstraint(fields=["env_task", "number"], name="unique_rubric_version_number")]

    def __str__(self) -> str:
        return f"{self.env_task} rubric v{self.number}"

    @property
    def is_frozen(self) -> bool:
        return self.frozen_at is not None


class CriterionTag(models.TextChoices):
    ESSENTIAL = "essential", "Essential"
    IMPORTANT = "important", "Important"
    OPTIONAL = "optional", "Optional"
    PITFALL = "pitfall", "Pitfall"


class GraderKind(models.TextChoices):
    LLM_JUDGE = "llm_judge", "LLM judge"
    CHECK = "check", "Deterministic check"


class Criterion(models.Model):
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.CASCADE, related_name="criteria")
    position = models.PositiveIntegerField(default=0)
    text = models.TextField()
    points = models.IntegerField(default=1, help_text="Negative points make this a penalty.")
    tag = models.CharField(max_length=16, choices=CriterionTag.choices, default=CriterionTag.IMPORTANT)
    grader_kind = models.CharField(max_length=16, choices=GraderKind.choices, default=GraderKind.LLM_JUDGE)
    grader_config = models.JSONField(default=dict, blank=True)
    explanation = models.TextField(blank=True)
    # Where the criterion came from, e.g. {"step": 812, "rollout": 40, "label": "Rollout 3, step 5"}:
    # a trajectory step the expert turned into this criterion (rollouts sit above authoring,
    # so this is a reference by id, not a foreign key).
    evidence = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.text[:80]

    def as_dict(self) -> dict:
        return {
            "text": self.text,
            "points": self.points,
            "tag": self.tag,
            "grader_kind": self.grader_kind,
            "grader_config": self.grader_config,
            "explanation": self.explanation,
            "evidence": self.evidence,
        }


# --- Drafting ----------------------------------------------------------------------------

class DraftJobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Drafting"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class DraftRun(TimeStampedModel):
    """One "Draft" / "Draft all" / "Redraft" request: a batch of per-document jobs whose
    counts make the progress bar."""

    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="draft_runs")
    endpoint = models.ForeignKey("llm.ModelEndpoint", null=True, on_delete=models.SET_NULL, related_name="+")
    endpoint_name = models.CharField(max_length=100)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    instruction = models.TextField(blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Draft run {self.pk} on {self.world}"


class DraftJob(models.Model):
    run = models.ForeignKey(DraftRun, on_delete=models.CASCADE, related_name="jobs")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="draft_jobs")
    status = models.CharField(max_length=16, choices=DraftJobStatus.choices, default=DraftJobStatus.QUEUED)
    error = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="The last sign of life of the worker running it (core.jobs).")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["run", "document"], name="one_job_per_document_per_run")]

    def __str__(self) -> str:
        return f"{self.document} in run {self.run_id}: {self.status}"


class SkeletonProposalStatus(models.TextChoices):
    QUEUED = "queued", "Waiting for the model"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class SkeletonProposal(TimeStampedModel):
    """A model's proposed data room for a world. The expert accepts items one by one or
    all at once; accepting creates skeleton documents. `items` is a list of
    {path, kind, format, brief, metadata, target_size, accepted: bool}."""

    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="skeleton_proposals")
    endpoint_name = models.CharField(max_length=100)
    endpoint = models.ForeignKey("llm.ModelEndpoint", null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=16, choices=SkeletonProposalStatus.choices, default=SkeletonProposalStatus.QUEUED)
    items = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Skeleton proposal {self.pk} for {self.world}"
