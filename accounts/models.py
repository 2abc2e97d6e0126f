from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models

from core.models import TimeStampedModel


class User(AbstractUser):
    pass


class Role(models.TextChoices):
    AUTHOR = "author", "Author"
    REVIEWER = "reviewer", "Reviewer"
    ADMIN = "admin", "Admin"


class Project(TimeStampedModel):
    """A suite of tasks for one domain. Everything else hangs off a project."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(TimeStampedModel):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user")]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.project}"

    # What each role may do. Admins do everything; reviewers never edit content.
    @property
    def can_author(self) -> bool:
        return self.role in (Role.AUTHOR, Role.ADMIN)

    @property
    def can_review(self) -> bool:
        return self.role in (Role.REVIEWER, Role.ADMIN)

    @property
    def can_export(self) -> bool:
        return self.role == Role.ADMIN
