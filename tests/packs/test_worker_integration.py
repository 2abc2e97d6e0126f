"""The pack build on a real Celery worker and a real broker, and the build's idempotency."""

import hashlib
import io
import json
import re
import time
import zipfile

import pytest
from django.core.files.storage import default_storage

from authoring.archipelago.cache import FOLDER, world_zip_key
from packs.models import Pack, PackStatus
from packs.services import pack_build, pack_create
from reviews.models import Decision, Submission
from reviews.services import review_decide, submission_claim_next, submission_create
from tests import factories

BUILD_TIMEOUT = 60


def _approved_submission(team, *, criteria: int = 3) -> Submission:
    world = factories.world(team.project, team.author, documents=3, drafted=True)
    env_task = factories.env_task(world, team.author, criteria=criteria)
    submission = submission_create(env_task=env_task, user=team.author)
    claimed = submission_claim_next(user=team.reviewer)
    assert claimed is not None and claimed.pk == submission.pk
    review_decide(submission=claimed, user=team.reviewer, decision=Decision.APPROVE, comment="Looks right.",
        checklist=factories.checklist(claimed.project_id))
    submission.refresh_from_db()
    return submission


def _wait_for_build(pack: Pack, timeout: float = BUILD_TIMEOUT) -> Pack:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pack.refresh_from_db()
        if pack.is_done:
            return pack
        time.sleep(0.25)
    raise AssertionError(f"pack {pack.pk} still {pack.status} ({pack.progress}%) after {timeout}s")


@pytest.mark.worker
def test_a_real_worker_builds_the_pack_queued_on_commit(team, celery_worker_process):
    submission = _approved_submission(team)
    env_task = submission.env_task

    # Not inside a transaction: the on_commit hook sends build_pack to the broker now.
    pack = pack_create(project_id=team.project.pk, user=team.admin, name="Demo pack", submission_ids=[submission.pk])

    pack = _wait_for_build(pack)
    assert pack.status == PackStatus.READY, pack.error
    assert pack.attempts == 1
    # Built by the worker process, not in this one.
    assert re.search(r"Task packs\.tasks\.build_pack\[[0-9a-f-]+\] succeeded", celery_worker_process.log_text())

    with pack.file.open("rb") as f:
        data = f.read()
    assert hashlib.sha256(data).hexdigest() == pack.sha256
    assert len(data) == pack.size_bytes

    with pack.file.open("rb") as f, zipfile.ZipFile(f) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("manifest.json"))
        assert {entry["path"] for entry in manifest["files"]} | {"manifest.json"} == names
        for entry in manifest["files"]:
            content = archive.read(entry["path"])
            assert hashlib.sha256(content).hexdigest() == entry["sha256"], entry["path"]
            assert len(content) == entry["bytes"]
        lines = [json.loads(line) for line in archive.read("taskwright/tasks.jsonl").decode().splitlines() if line]
        world = zipfile.ZipFile(io.BytesIO(archive.read(f"world_files_zipped/world-{env_task.world_id}.zip")))
        inspect_samples = archive.read("inspect/samples.jsonl").decode().splitlines()

    assert manifest["counts"]["tasks"] == 1 and len(inspect_samples) == 1
    assert manifest["pack"]["version"] == pack.version
    [line] = lines
    assert line["task_id"] == f"task-{env_task.pk}"
    assert line["prompt"] == env_task.prompt
    assert [c["text"] for c in line["rubric"]["criteria"]] == [c.text for c in submission.rubric_version.criteria.all()]
    assert [c["points"] for c in line["rubric"]["criteria"]] == [5, 4, 3]

    assert sorted(n.removeprefix("filesystem/") for n in world.namelist() if n.startswith("filesystem/") and not n.endswith("/")) == \
        sorted(env_task.world.documents.values_list("path", flat=True))

    # The approval also queued its world's rendering on the packs queue, after it committed.
    rendered = r"Task reviews\.tasks\.render_approved_world\[[0-9a-f-]+\] succeeded"
    deadline = time.monotonic() + BUILD_TIMEOUT
    while not re.search(rendered, celery_worker_process.log_text()):
        assert time.monotonic() < deadline, "the approval's world was never rendered on the worker"
        time.sleep(0.25)
    key = world_zip_key(submission.snapshot["world"])
    assert default_storage.exists(f"{FOLDER}/{key}.zip") and default_storage.exists(f"{FOLDER}/{key}.json")


def test_building_a_pack_twice_is_a_no_op_the_second_time(team, settings, tmp_path, django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path
    submission = _approved_submission(team)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        pack = pack_create(project_id=team.project.pk, user=team.admin, name="Twice", submission_ids=[submission.pk])
    assert len(callbacks) == 1  # the build is queued only once the pack is committed

    pack_build(pack_id=pack.pk)
    pack.refresh_from_db()
    assert pack.status == PackStatus.READY, pack.error
    first = (pack.sha256, pack.file.name, pack.attempts, pack.finished_at)
    assert pack.attempts == 1

    pack_build(pack_id=pack.pk)  # e.g. the broker redelivered the message
    pack.refresh_from_db()
    assert (pack.sha256, pack.file.name, pack.attempts, pack.finished_at) == first
    assert pack.status == PackStatus.READY
    assert sorted(p.name for p in (tmp_path / "packs" / team.project.slug).iterdir()) == [pack.file.name.rpartition("/")[2]]
