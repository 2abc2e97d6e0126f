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
    attempts = models.PositiveSmallIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="The last sign of life of the worker running it (core.jobs).")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["project", "version"], name="unique_pack_version_per_project")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def filename(self) -> str:
        return f"{self.project.slug}-{self.name}-v{self.version}.zip".replace(" ", "-")

    @property
    def is_done(self) -> bool:
        return self.status in (PackStatus.READY, PackStatus.FAILED)
