from django.conf import settings
from django.db import models

from authoring.models import DocumentFormat, DocumentKind, World

DEFAULT_ACTOR_NAME = "Agent"
DEFAULT_ACTOR_EMAIL = "agent@taskwright.invalid"


class OverlayPurpose(models.TextChoices):
    SANDBOX = "sandbox", "Sandbox"
    ROLLOUT = "rollout", "Rollout"


class Overlay(models.Model):
    """A scratch layer over one world: everything an agent (or a person trying the apps)
    writes lands here as entries, and the authored world is never modified. The rollouts
    app points its own foreign key at this model; nothing here knows about rollouts."""

    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="overlays")
    label = models.CharField(max_length=200, blank=True)
    purpose = models.CharField(max_length=16, choices=OverlayPurpose.choices, default=OverlayPurpose.SANDBOX)
    # The task a trial run's overlay was made for: its input files are laid over the world in
    # this overlay (the tools, the MCP server and the replica apps all read them, as the agent did).
    env_task = models.ForeignKey("authoring.EnvTask", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Who the agent is when it sends mail, posts in chat or creates events.
    actor_name = models.CharField(max_length=200, default=DEFAULT_ACTOR_NAME)
    actor_email = models.CharField(max_length=254, default=DEFAULT_ACTOR_EMAIL)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # When an entry was last written or removed: removing an overlay-only file leaves no
    # entry behind, so the entries alone cannot tell that the overlay changed.
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.label or f"Overlay {self.pk} on {self.world_id}"


class OverlayAction(models.TextChoices):
    UPSERT = "upsert", "Create or replace"
    DELETE = "delete", "Delete"


class OverlayEntry(models.Model):
    """One path's state in an overlay: an upsert shadows (or adds to) the world's item at
    that path, a delete hides it. One entry per path: the overlay keeps final states, so
    its diff against the world is exactly the entries."""

    overlay = models.ForeignKey(Overlay, on_delete=models.CASCADE, related_name="entries")
    path = models.CharField(max_length=500)
    kind = models.CharField(max_length=16, choices=DocumentKind.choices, default=DocumentKind.FILE)
    format = models.CharField(max_length=8, choices=DocumentFormat.choices, blank=True)
    action = models.CharField(max_length=8, choices=OverlayAction.choices, default=OverlayAction.UPSERT)
    content = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["overlay", "path"], name="unique_overlay_entry_path")]
        verbose_name_plural = "overlay entries"

    def __str__(self) -> str:
        return f"{self.action} {self.path}"
