"""Building a pack: every file in the manifest with its sha256, the worlds once per frozen
state, deterministic bytes, and builds that stop with a reason instead of a broken zip."""

import hashlib
import io
import json
import zipfile

import pytest

from authoring import services as authoring_services
from packs import formats as pack_formats
from packs.formats.base import FormatWriter
from packs.models import Pack, PackStatus, PackTaskEntry, PackWorldEntry
from packs.services import pack_build, pack_build_again, pack_create
from reviews.models import Submission
from tests import factories
from tests.packs.conftest import approve


def built(pack: Pack) -> Pack:
    pack_build(pack_id=pack.pk)
    pack.refresh_from_db()
    return pack


def open_zip(pack: Pack) -> zipfile.ZipFile:
    with pack.file.open("rb") as handle:
        return zipfile.ZipFile(io.BytesIO(handle.read()))


def test_a_pack_lists_every_file_with_its_sha256_and_the_demo_world_as_a_real_world_zip(demo_pack):
    admin = demo_pack.project.memberships.get(user__username="demo-admin").user
    pack = built(pack_create(project_id=demo_pack.project.pk, user=admin, name="Launch", submission_ids=[demo_pack.submission.pk],
                             formats=["taskwright"]))
    assert pack.status == PackStatus.READY, pack.error
    archive = open_zip(pack)
    manifest = json.loads(archive.read("manifest.json"))
    listed = {f["path"]: f for f in manifest["files"]}
    assert set(archive.namelist()) == set(listed) | {"manifest.json"}
    for path, entry in listed.items():
        data = archive.read(path)
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (entry["sha256"], entry["bytes"]), path
    world_id = f"world-{demo_pack.env_task.world_id}"
    assert f"world_files_zipped/{world_id}.zip" in listed
    world = zipfile.ZipFile(io.BytesIO(archive.read(f"world_files_zipped/{world_id}.zip")))
    assert any(n.startswith("filesystem/") and n.endswith(".docx") for n in world.namelist())
    assert ".apps_data/mail/sent.mbox" in world.namelist()
    assert manifest["counts"] == {"tasks": 1, "worlds": 1, "criteria": 6}
    assert manifest["formats"] == ["taskwright"]
    [task] = manifest["tasks"]
    assert (task["task_id"], task["version"], task["world_id"]) == (f"task-{demo_pack.env_task.pk}", 1, world_id)
    assert task["cost"] == {"model_usd": None, "expert_usd": None}  # only the scripted sample model ran: no cost figure
    assert pack.manifest["counts"]["tasks"] == 1 and "tasks" not in pack.manifest  # the database keeps the summary
    assert PackTaskEntry.objects.filter(pack=pack).count() == 1
    assert PackWorldEntry.objects.get(pack=pack).world_id == world_id
    assert "inspect" not in archive.read("README.md").decode()  # only the chosen formats are described


def test_the_same_pack_builds_to_the_same_bytes(demo_pack):
    admin = demo_pack.project.memberships.get(user__username="demo-admin").user
    first = built(pack_create(project_id=demo_pack.project.pk, user=admin, name="Same", submission_ids=[demo_pack.submission.pk],
                              formats=["taskwright"]))
    Pack.objects.filter(pk=first.pk).update(status=PackStatus.QUEUED)
    again = built(first)
    assert again.sha256 == first.sha256 and again.status == PackStatus.READY
    assert PackTaskEntry.objects.filter(pack=first).count() == 1  # a rebuild does not add its records twice


def test_two_tasks_frozen_on_two_states_of_one_world_get_a_world_zip_each(team, world, env_task):
    for document in world.documents.all():
        authoring_services.document_update(document=document, user=team.author, base_revision=document.revision, content="First text.")
    first = approve(env_task, author=team.author, reviewer=team.reviewer)
    for document in world.documents.all():
        authoring_services.document_update(document=document, user=team.author, base_revision=document.revision, content="Changed text.")
    later_task = factories.env_task(world, team.author, title="A later task")
    second = approve(later_task, author=team.author, reviewer=team.reviewer)
    pack = built(pack_create(project_id=team.project.pk, user=team.admin, name="Both", submission_ids=[first.pk, second.pk],
                             formats=["taskwright"]))
    assert pack.status == PackStatus.READY, pack.error
    names = [n for n in open_zip(pack).namelist() if n.startswith("world_files_zipped/")]
    assert names == [f"world_files_zipped/world-{world.pk}.zip", f"world_files_zipped/world-{world.pk}-2.zip"]
    tasks = [json.loads(line) for line in open_zip(pack).read("taskwright/tasks.jsonl").splitlines()]
    assert [(t["title"], t["world_id"]) for t in tasks] == [(env_task.title, f"world-{world.pk}"), ("A later task", f"world-{world.pk}-2")]


def test_a_world_document_that_cannot_be_rendered_stops_the_build_naming_task_and_document(team, world, env_task):
    for document in world.documents.all():
        authoring_services.document_update(document=document, user=team.author, base_revision=document.revision, content="Text.")
    submission = approve(env_task, author=team.author, reviewer=team.reviewer)
    # Submit and approve refuse a world that cannot be built; a version approved before the
    # renderers grew stricter can still hold such a document: the build must stop on it.
    snapshot = submission.snapshot
    broken = {**snapshot["world"]["documents"][0], "path": "Mail/Broken", "kind": "email", "format": "", "content": "Body",
              "metadata": {"from": "not an address", "date": "yesterday"}}
    snapshot["world"]["documents"].append(broken)
    Submission.objects.filter(pk=submission.pk).update(snapshot=snapshot)
    pack = built(pack_create(project_id=team.project.pk, user=team.admin, name="Broken", submission_ids=[submission.pk]))
    assert pack.status == PackStatus.FAILED
    assert env_task.title in pack.error and "Mail/Broken" in pack.error, pack.error
    assert not pack.file and not PackTaskEntry.objects.filter(pack=pack).exists()


class _Failing(FormatWriter):
    name = "taskwright"

    def add_task(self, task):
        raise ValueError("disk on fire")

    def finish(self, out):
        raise AssertionError("never reached")


def test_a_format_that_fails_stops_the_build_with_its_name_and_offers_no_file(team, world, env_task, monkeypatch):
    for document in world.documents.all():
        authoring_services.document_update(document=document, user=team.author, base_revision=document.revision, content="Text.")
    submission = approve(env_task, author=team.author, reviewer=team.reviewer)
    monkeypatch.setitem(pack_formats.FORMATS, "taskwright", ("tests.packs.test_build", "_Failing", "Taskwright's own format"))
    pack = built(
        pack_create(project_id=team.project.pk, user=team.admin, name="Fails", submission_ids=[submission.pk], formats=["taskwright"])
    )
    assert pack.status == PackStatus.FAILED and not pack.file
    assert "Taskwright's own format" in pack.error and "disk on fire" in pack.error and env_task.title in pack.error


def test_formats_are_checked_and_building_again_makes_the_next_version(demo_pack):
    from core.exceptions import ApplicationError

    admin = demo_pack.project.memberships.get(user__username="demo-admin").user
    with pytest.raises(ApplicationError, match="Unknown pack format: zip"):
        pack_create(project_id=demo_pack.project.pk, user=admin, name="X", submission_ids=[demo_pack.submission.pk], formats=["zip"])
    with pytest.raises(ApplicationError, match="at least one format"):
        pack_create(project_id=demo_pack.project.pk, user=admin, name="X", submission_ids=[demo_pack.submission.pk], formats=[])
    first = pack_create(project_id=demo_pack.project.pk, user=admin, name="Launch", submission_ids=[demo_pack.submission.pk],
                        formats=["huggingface", "apex"])
    assert first.formats == ["apex", "huggingface"]  # the canonical order
    pack_build(pack_id=first.pk)  # Build again waits for the version being built
    again = pack_build_again(pack=first, user=admin)
    assert (again.name, again.version, again.formats) == ("Launch", first.version + 1, first.formats)
    assert list(again.submissions.all()) == [demo_pack.submission]
