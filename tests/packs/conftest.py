"""The demo task as it enters a pack: seeded, submitted, approved, and turned into the
pack's records (packs.formats.records), with its world zip."""

from dataclasses import dataclass, field
from io import StringIO

import pytest
from django.core.management import call_command

from accounts.models import Project, User
from authoring.models import EnvTask
from authoring.services.world_transfer import world_export_archive
from packs.formats.records import PackTask, PackWorld, task_from_snapshot, world_from_snapshot, world_key
from reviews.models import Decision, Submission
from reviews.services import review_decide, submission_claim_next, submission_create
from tests import factories


@dataclass
class DemoPack:
    project: Project
    env_task: EnvTask
    submission: Submission
    worlds: list[PackWorld] = field(default_factory=list)
    tasks: list[PackTask] = field(default_factory=list)
    world_zips: dict[str, bytes] = field(default_factory=dict)  # world_id → the zip's bytes


def approve(env_task: EnvTask, *, author: User, reviewer: User) -> Submission:
    submission = submission_create(env_task=env_task, user=author)
    claimed = submission_claim_next(user=reviewer)
    assert claimed is not None and claimed.pk == submission.pk
    review_decide(submission=claimed, user=reviewer, decision=Decision.APPROVE, comment="Good.",
                  checklist=factories.checklist(claimed.project_id))
    submission.refresh_from_db()
    return submission


@pytest.fixture
def demo_seeded(db, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    settings.MEDIA_ROOT = tmp_path / "media"
    call_command("seed_demo", stdout=StringIO())
    return Project.objects.get(slug="corporate-law-ma")


@pytest.fixture
def demo_pack(demo_seeded) -> DemoPack:
    project = demo_seeded
    env_task = project.env_tasks.get()
    submission = approve(env_task, author=User.objects.get(username="demo-author"), reviewer=User.objects.get(username="demo-reviewer"))
    snapshot = submission.snapshot
    world_id = world_key(snapshot["world"]["id"], 1)
    rubric = submission.rubric_version
    grading = {"pass_threshold": rubric.pass_threshold, "all_must_pass": rubric.all_must_pass, "judge_samples": rubric.judge_samples}
    with world_export_archive(world=env_task.world) as archive:
        zip_bytes = archive.read()
    return DemoPack(
        project=project,
        env_task=env_task,
        submission=submission,
        worlds=[world_from_snapshot(snapshot["world"], world_id=world_id)],
        tasks=[task_from_snapshot(snapshot, submission_id=submission.pk, version=submission.number, world_id=world_id,
                                  domain=project.name, grading=grading)],
        world_zips={world_id: zip_bytes},
    )
