"""A task's input files in a pack: their bytes at task_files/<task_id>/<path>, named by every
format that runs agents (APEX, Inspect, the native format), typed in the parquet, listed in
the manifest, and carried by the native round trip byte for byte."""

import hashlib
import io
import json
import zipfile

import pyarrow.parquet as pq
import pytest

from accounts.models import Role, User
from authoring.models import TaskInputFile
from authoring.services.task_files import task_file_name, task_input_file_add_bytes, task_input_file_remove
from packs.models import PackStatus
from packs.selectors import pack_diff, pack_format_files
from packs.services import pack_build, pack_create, pack_import
from tests import factories
from tests.packs.conftest import approve
from tests.packs.test_native import build, members, upload, without_ids

FIGURES = b"quarter,revenue\r\nQ1,120\r\nQ2,135\r\n"  # CRLF kept: the bytes, not the text
MEMO = "# Board memo\n\nThe board meets on 12 March — bring the Q2 figures.\n".encode()


@pytest.fixture
def task_with_files(demo_seeded):
    """The demo task with two input files (in place of the demo's own), approved."""
    project = demo_seeded
    env_task = project.env_tasks.get()
    author, reviewer = User.objects.get(username="demo-author"), User.objects.get(username="demo-reviewer")
    for demo_file in env_task.input_files.all():
        task_input_file_remove(input_file=demo_file, user=author)
    task_input_file_add_bytes(env_task=env_task, user=author, path="Inputs/figures.csv", data=FIGURES)
    task_input_file_add_bytes(env_task=env_task, user=author, path="Inputs/Board memo.md", data=MEMO)
    submission = approve(env_task, author=author, reviewer=reviewer)
    return project, env_task, submission


def test_the_submission_freezes_the_files_by_sha256(task_with_files):
    _, _, submission = task_with_files
    assert submission.snapshot["task"]["input_files"] == [
        {"path": "Inputs/Board memo.md", "size": len(MEMO), "sha256": hashlib.sha256(MEMO).hexdigest()},
        {"path": "Inputs/figures.csv", "size": len(FIGURES), "sha256": hashlib.sha256(FIGURES).hexdigest()},
    ]


def test_every_format_names_the_files_and_the_zip_holds_their_exact_bytes(task_with_files):
    project, env_task, submission = task_with_files
    admin = project.memberships.get(role=Role.ADMIN).user
    pack = pack_create(project_id=project.pk, user=admin, name="With files", submission_ids=[submission.pk])
    pack_build(pack_id=pack.pk)
    pack.refresh_from_db()
    assert pack.status == PackStatus.READY, pack.error
    with pack.file.open("rb") as handle:
        archive = zipfile.ZipFile(io.BytesIO(handle.read()))
    task_id = f"task-{env_task.pk}"
    figures, memo = f"task_files/{task_id}/Inputs/figures.csv", f"task_files/{task_id}/Inputs/Board memo.md"
    assert archive.read(figures) == FIGURES and archive.read(memo) == MEMO

    manifest = json.loads(archive.read("manifest.json"))
    listed = {f["path"]: f["sha256"] for f in manifest["files"]}
    assert listed[figures] == hashlib.sha256(FIGURES).hexdigest() and listed[memo] == hashlib.sha256(MEMO).hexdigest()
    assert [f["path"] for f in manifest["tasks"][0]["input_files"]] == ["Inputs/Board memo.md", "Inputs/figures.csv"]
    assert "`task_files/<task_id>/`" in archive.read("README.md").decode()
    assert "no `task_files/` folder" not in archive.read("README.md").decode()

    [apex_task] = json.loads(archive.read("tasks_and_rubrics.json"))
    assert apex_task["task_input_files"] == [memo, figures]

    [sample] = [json.loads(line) for line in archive.read("inspect/samples.jsonl").splitlines()]
    assert sample["files"]["task_files/Inputs/figures.csv"] == f"../{figures}"
    assert json.loads(sample["files"]["task_files.json"]) == ["Inputs/Board memo.md", "Inputs/figures.csv"]

    [native] = [json.loads(line) for line in archive.read("taskwright/tasks.jsonl").splitlines()]
    assert [f["sha256"] for f in native["input_files"]] == [hashlib.sha256(MEMO).hexdigest(), hashlib.sha256(FIGURES).hexdigest()]

    table = pq.read_table(io.BytesIO(archive.read("hf/tasks.parquet")))
    column = table.schema.field("input_files").type
    assert [(f.name, str(f.type), f.nullable) for f in column.value_type] == [
        ("path", "string", False), ("size", "int64", False), ("sha256", "string", False),
    ]
    assert table.column("input_files").to_pylist() == [[
        {"path": "Inputs/Board memo.md", "size": len(MEMO), "sha256": hashlib.sha256(MEMO).hexdigest()},
        {"path": "Inputs/figures.csv", "size": len(FIGURES), "sha256": hashlib.sha256(FIGURES).hexdigest()},
    ]]
    assert "`input_files`" in archive.read("hf/README.md").decode()

    # The per-format downloads of the formats that run agents carry them; HealthBench's does not.
    assert figures in pack_format_files(pack=pack, key="apex") and figures in pack_format_files(pack=pack, key="inspect")
    assert figures not in pack_format_files(pack=pack, key="healthbench")


def test_a_pack_of_formats_that_run_no_agent_lists_the_input_files_without_their_bytes(task_with_files):
    project, _, submission = task_with_files
    admin = project.memberships.get(role=Role.ADMIN).user
    _, data = build(project, admin, [submission.pk], formats=("healthbench", "huggingface"))
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert not [name for name in archive.namelist() if name.startswith("task_files/")]
    assert "`task_files/<task_id>/`" not in archive.read("README.md").decode()
    table = pq.read_table(io.BytesIO(archive.read("hf/tasks.parquet")))
    assert [f["path"] for f in table.column("input_files").to_pylist()[0]] == ["Inputs/Board memo.md", "Inputs/figures.csv"]


def test_the_frozen_bytes_are_packed_even_after_the_author_replaced_the_file(task_with_files):
    project, env_task, submission = task_with_files
    env_task.input_files.filter(path="Inputs/figures.csv").delete()  # (the task is approved: as a later edit would)
    admin = project.memberships.get(role=Role.ADMIN).user
    _, data = build(project, admin, [submission.pk], formats=("apex",))
    assert zipfile.ZipFile(io.BytesIO(data)).read(f"task_files/task-{env_task.pk}/Inputs/figures.csv") == FIGURES


def test_missing_bytes_stop_the_build_naming_the_task_and_file(task_with_files):
    from django.core.files.storage import default_storage

    project, env_task, submission = task_with_files
    default_storage.delete(task_file_name(hashlib.sha256(FIGURES).hexdigest()))
    admin = project.memberships.get(role=Role.ADMIN).user
    pack = pack_create(project_id=project.pk, user=admin, name="Broken", submission_ids=[submission.pk], formats=["apex"])
    pack_build(pack_id=pack.pk)
    pack.refresh_from_db()
    assert pack.status == PackStatus.FAILED and not pack.file
    assert "'Inputs/figures.csv'" in pack.error and env_task.title in pack.error and "missing from storage" in pack.error


def test_native_round_trip_with_input_files_gives_the_same_bytes(task_with_files):
    project, env_task, submission = task_with_files
    admin = project.memberships.get(role=Role.ADMIN).user
    _, first = build(project, admin, [submission.pk])
    empty = factories.project("Imported with files")
    new_admin, reviewer = factories.member(empty, Role.ADMIN), factories.member(empty, Role.REVIEWER)
    [imported] = pack_import(project_id=empty.pk, user=new_admin, uploaded_file=upload(first))
    assert list(imported.input_files.values_list("path", "size", "sha256")) == list(
        env_task.input_files.values_list("path", "size", "sha256")
    )
    _, second = build(empty, new_admin, [approve(imported, author=new_admin, reviewer=reviewer).pk])
    before, after = members(first), members(second)
    assert {without_ids(n) for n in before} == {without_ids(n) for n in after}
    files = {without_ids(n): data for n, data in after.items()}
    for name, data in before.items():
        if name.startswith("task_files/") or name.endswith(".zip"):
            assert files[without_ids(name)] == data, name
        elif name != "manifest.json":
            assert without_ids(data.decode()) == without_ids(files[without_ids(name)].decode()), name


def test_an_import_whose_task_names_a_file_the_pack_lacks_is_refused_whole(task_with_files):
    project, env_task, submission = task_with_files
    admin = project.memberships.get(role=Role.ADMIN).user
    _, data = build(project, admin, [submission.pk])
    archive = zipfile.ZipFile(io.BytesIO(data))
    entries = {n: archive.read(n) for n in archive.namelist()}
    missing = f"task_files/task-{env_task.pk}/Inputs/figures.csv"
    entries.pop(missing)
    manifest = json.loads(entries["manifest.json"])
    manifest["files"] = [f for f in manifest["files"] if f["path"] != missing]
    entries["manifest.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as rezipped:
        for name, content in entries.items():
            rezipped.writestr(name, content)
    empty = factories.project("Target")
    before = TaskInputFile.objects.count()
    with pytest.raises(Exception, match=r"has the input file 'Inputs/figures\.csv', which is not in the pack"):
        pack_import(project_id=empty.pk, user=factories.member(empty, Role.ADMIN), uploaded_file=upload(out.getvalue()))
    assert TaskInputFile.objects.count() == before and not empty.env_tasks.exists()


def test_the_pack_page_diff_says_the_input_files_changed(task_with_files):
    project, env_task, submission = task_with_files
    admin = project.memberships.get(role=Role.ADMIN).user
    first, _ = build(project, admin, [submission.pk])
    author, reviewer = User.objects.get(username="demo-author"), User.objects.get(username="demo-reviewer")
    from authoring.services import env_task_set_status

    env_task.refresh_from_db()
    env_task_set_status(env_task=env_task, actor=admin, to_status="archived")
    env_task_set_status(env_task=env_task, actor=admin, to_status="draft")
    task_input_file_remove(input_file=env_task.input_files.get(path="Inputs/figures.csv"), user=author)
    second, _ = build(project, admin, [approve(env_task, author=author, reviewer=reviewer).pk])
    [changed] = pack_diff(pack=second, previous=first)["changed"]
    assert changed["parts"] == ["input files"]
