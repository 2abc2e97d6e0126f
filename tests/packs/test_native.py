"""Our own format: a pack imported into an empty project and exported again gives the
same bytes, ids aside; a pack that is not ours, truncated or altered is refused whole."""

import io
import json
import re
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import Role
from authoring.models import EnvTask, World
from core.exceptions import ApplicationError
from packs.models import Pack, PackStatus
from packs.services import pack_build, pack_create, pack_import
from tests import factories
from tests.packs.conftest import approve


def build(project, admin, submission_ids, formats=("taskwright",)) -> tuple[Pack, bytes]:
    pack = pack_create(project_id=project.pk, user=admin, name="Release", submission_ids=submission_ids, formats=list(formats))
    pack_build(pack_id=pack.pk)
    pack.refresh_from_db()
    assert pack.status == PackStatus.READY, pack.error
    with pack.file.open("rb") as handle:
        return pack, handle.read()


def upload(data: bytes, name: str = "pack.zip") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/zip")


def without_ids(text: str) -> str:
    return re.sub(r"\b(task|world)-\d+(-\d+)?\b", r"\1-ID", text)


def members(data: bytes) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    return {re.sub(r"\b(task|world)-\d+", r"\1-ID", n): archive.read(n) for n in archive.namelist()}


def test_export_import_export_gives_the_same_bytes_but_for_ids(demo_pack):
    admin = demo_pack.project.memberships.get(role=Role.ADMIN).user
    _, first = build(demo_pack.project, admin, [demo_pack.submission.pk])
    empty = factories.project("Imported")
    new_admin, reviewer = factories.member(empty, Role.ADMIN), factories.member(empty, Role.REVIEWER)
    [task] = pack_import(project_id=empty.pk, user=new_admin, uploaded_file=upload(first))
    original = demo_pack.env_task
    assert (task.title, task.prompt, task.reference_answer, task.status) == (
        original.title,
        original.prompt,
        original.reference_answer,
        "draft",
    )
    rubric, source = task.rubric_versions.get(), demo_pack.submission.rubric_version
    assert [c.as_dict() for c in rubric.criteria.all()] == [{**c.as_dict(), "evidence": {}} for c in source.criteria.all()]
    assert (rubric.pass_threshold, rubric.all_must_pass, rubric.judge_samples) == (
        source.pass_threshold,
        source.all_must_pass,
        source.judge_samples,
    )
    assert task.world.outline == original.world.outline and task.world.facts == original.world.facts
    _, second = build(empty, new_admin, [approve(task, author=new_admin, reviewer=reviewer).pk])
    before, after = members(first), members(second)
    assert set(before) == set(after)
    for name in sorted(before):
        if name == "manifest.json":
            continue
        if name.endswith(".zip"):
            assert before[name] == after[name], name  # the world, byte for byte
        else:
            assert without_ids(before[name].decode()) == without_ids(after[name].decode()), name
    m1, m2 = json.loads(before["manifest.json"]), json.loads(after["manifest.json"])
    assert m1["may_differ"] == m2["may_differ"] and "task_id" in m1["may_differ"]
    for manifest in (m1, m2):
        manifest.pop("pack")
        for row in manifest["tasks"]:
            for key in ("task_id", "task_pk", "submission_id", "version", "rubric_version", "world_id", "difficulty", "cost", "audit"):
                row.pop(key)
        manifest["files"] = [f["path"] for f in manifest["files"]]
    assert without_ids(json.dumps(m1, sort_keys=True)) == without_ids(json.dumps(m2, sort_keys=True))


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda data: b"PK not a zip at all", "not a valid zip"),
        (lambda data: data[: len(data) // 2], "zip"),
        ("foreign", "not a Taskwright pack"),
        ("altered", "does not match the sha256"),
        ("missing", "incomplete"),
    ],
)
def test_a_pack_that_is_not_ours_truncated_or_altered_is_refused_and_nothing_is_imported(demo_pack, damage, reason):
    admin = demo_pack.project.memberships.get(role=Role.ADMIN).user
    _, data = build(demo_pack.project, admin, [demo_pack.submission.pk])
    if damage == "foreign":
        data = _rezip({"manifest.json": b'{"format": "something-else"}', "tasks.json": b"[]"})
    elif damage in ("altered", "missing"):
        archive = zipfile.ZipFile(io.BytesIO(data))
        entries = {n: archive.read(n) for n in archive.namelist()}
        if damage == "altered":
            entries["taskwright/tasks.jsonl"] = entries["taskwright/tasks.jsonl"].replace(b"change", b"chance")
        else:
            entries.pop("taskwright/tasks.jsonl")
        data = _rezip(entries)
    else:
        data = damage(data)
    empty = factories.project("Target")
    target_admin = factories.member(empty, Role.ADMIN)
    worlds, tasks = World.objects.count(), EnvTask.objects.count()
    with pytest.raises(ApplicationError) as refused:
        pack_import(project_id=empty.pk, user=target_admin, uploaded_file=upload(data))
    assert reason in refused.value.message and "Nothing was imported" in refused.value.message, refused.value.message
    assert (World.objects.count(), EnvTask.objects.count()) == (worlds, tasks)


def test_only_admins_import_packs(demo_pack):
    admin = demo_pack.project.memberships.get(role=Role.ADMIN).user
    _, data = build(demo_pack.project, admin, [demo_pack.submission.pk])
    author = demo_pack.project.memberships.get(role=Role.AUTHOR).user
    with pytest.raises(ApplicationError):
        pack_import(project_id=demo_pack.project.pk, user=author, uploaded_file=upload(data))


def _rezip(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, value in entries.items():
            archive.writestr(name, value)
    return out.getvalue()


def test_build_pack_and_import_pack_commands(demo_pack, tmp_path):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = tmp_path / "release.zip"
    printed = StringIO()
    call_command("build_pack", project=demo_pack.project.slug, username="demo-admin", name="Scripted", formats="taskwright,healthbench",
                 out=str(out), stdout=printed)
    assert "Built Scripted v1 (1 tasks, formats: healthbench, taskwright)" in printed.getvalue()
    assert {"healthbench.jsonl", "taskwright/tasks.jsonl"} <= set(zipfile.ZipFile(out).namelist())
    target = factories.project("Scripted target")
    factories.member(target, Role.ADMIN, username="target-admin")
    printed = StringIO()
    call_command("import_pack", str(out), project=target.slug, username="target-admin", stdout=printed)
    assert "Imported 1 task(s)" in printed.getvalue() and target.env_tasks.count() == 1
    with pytest.raises(CommandError, match="Unknown pack format"):
        call_command("build_pack", project=demo_pack.project.slug, username="demo-admin", formats="zip", stdout=StringIO())
    with pytest.raises(CommandError, match="No such file"):
        call_command("import_pack", str(tmp_path / "missing.zip"), project=target.slug, username="target-admin")


def test_the_taskwright_format_downloaded_on_its_own_imports(demo_pack, client):
    """The pack page's per-format download of our own format carried the whole pack's manifest,
    which lists files that zip does not hold, so its import was refused as incomplete. A
    per-format zip now has a manifest of its own (the pack's, listing only what it holds)."""
    from django.urls import reverse

    admin = demo_pack.project.memberships.get(role=Role.ADMIN).user
    pack, _ = build(demo_pack.project, admin, [demo_pack.submission.pk], formats=("apex", "healthbench", "taskwright"))
    client.force_login(admin)
    download = client.get(reverse("pack-download-format", args=[pack.pk, "taskwright"]))
    data = b"".join(download.streaming_content)
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("manifest.json"))
    assert manifest["formats"] == ["taskwright"] and manifest["subset_of"] == {"formats": ["apex", "healthbench", "taskwright"],
                                                                              "sha256": pack.sha256}
    assert sorted(f["path"] for f in manifest["files"]) == sorted(n for n in zipfile.ZipFile(io.BytesIO(data)).namelist()
                                                                   if n != "manifest.json")
    empty = factories.project("From one format")
    [task] = pack_import(project_id=empty.pk, user=factories.member(empty, Role.ADMIN), uploaded_file=upload(data, "taskwright.zip"))
    assert task.title == demo_pack.env_task.title and task.rubric_versions.get().criteria.count() == 6


def test_another_format_downloaded_on_its_own_is_refused_with_the_right_advice(demo_pack, client):
    """Importing the APEX part of a pack that has our format said "the pack was built without
    Taskwright's own format… build it again": it was built with it. The refusal now says to
    import the whole pack or its own-format part."""
    from django.urls import reverse

    admin = demo_pack.project.memberships.get(role=Role.ADMIN).user
    pack, _ = build(demo_pack.project, admin, [demo_pack.submission.pk], formats=("apex", "taskwright"))
    client.force_login(admin)
    data = b"".join(client.get(reverse("pack-download-format", args=[pack.pk, "apex"])).streaming_content)
    empty = factories.project("From the APEX part")
    with pytest.raises(ApplicationError) as refused:
        pack_import(project_id=empty.pk, user=factories.member(empty, Role.ADMIN), uploaded_file=upload(data, "apex.zip"))
    assert "it is the download of one format (apex) of a pack" in refused.value.message
    assert "build it again" not in refused.value.message and not empty.worlds.exists()
