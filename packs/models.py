from django.conf import settings
from django.db import models

from accounts.models import Project
from core.models import TimeStampedModel
from reviews.models import Submission


class PackStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class Pack(TimeStampedModel):
    """An immutable, versioned export of approved task versions."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="packs")
    name = models.CharField(max_length=120)
    version = models.PositiveIntegerField()
    submissions = models.ManyToManyField(Submission, related_name="packs")
    status = models.CharField(max_length=16, choices=PackStatus.choices, default=PackStatus.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done while building.")
    file = models.FileField(upload_to="packs/", blank=True)
    size_bytes = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    formats = models.JSONField(default=list, blank=True, help_text="The formats the pack is written in (packs.formats keys).")
    attempts = models.PositiveSmallIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="The last sign of life of the worker running it (core.jobs).")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # Versions count per pack name: "Bank only" v1, v2… beside "M&A starter" v1, v2…
        constraints = [models.UniqueConstraint(fields=["project", "name", "version"], name="unique_pack_version_per_name")]
        indexes = [models.Index(fields=["project", "created_at", "id"], name="packs_pack_project_list")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def filename(self) -> str:
        return f"{self.project.slug}-{self.name}-v{self.version}.zip".replace(" ", "-")

    @property
    def is_done(self) -> bool:
        return self.status in (PackStatus.READY, PackStatus.FAILED, PackStatus.CANCELLED)


class PackWorldEntry(models.Model):
    """One world state a built pack holds: what its version diff compares."""

    pack = models.ForeignKey(Pack, on_delete=models.CASCADE, related_name="world_entries")
    world_id = models.CharField(max_length=40, help_text="The pack's id of the world state, e.g. world-7.")
    world_pk = models.PositiveBigIntegerField()
    title = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)
    documents = models.JSONField(default=dict, help_text="path → digest of the document's content, metadata and brief")
    counts = models.JSONField(default=dict)

    class Meta:
        ordering = ["pack", "world_id"]
        constraints = [models.UniqueConstraint(fields=["pack", "world_id"], name="unique_world_entry_per_pack")]

    def __str__(self) -> str:
        return f"{self.world_id} in {self.pack}"


class PackTaskEntry(models.Model):
    """One task version a built pack holds, with the digests its version diff compares."""

    pack = models.ForeignKey(Pack, on_delete=models.CASCADE, related_name="task_entries")
    submission = models.ForeignKey(Submission, null=True, on_delete=models.SET_NULL, related_name="+")
    task_pk = models.PositiveBigIntegerField(help_text="The task across versions: what 'the same task' means in a diff.")
    task_id = models.CharField(max_length=40)
    title = models.CharField(max_length=200)
    version = models.PositiveIntegerField()
    rubric_version = models.PositiveIntegerField()
    world_id = models.CharField(max_length=40)
    criteria = models.PositiveIntegerField(default=0)
    fingerprint = models.JSONField(default=dict, help_text="digests of prompt, reference_answer, rubric and world")
    difficulty = models.JSONField(null=True, blank=True)
    cost = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["pack", "position"]
        constraints = [models.UniqueConstraint(fields=["pack", "position"], name="unique_task_entry_position_per_pack")]

    def __str__(self) -> str:
        return f"{self.task_id} v{self.version} in {self.pack}"
