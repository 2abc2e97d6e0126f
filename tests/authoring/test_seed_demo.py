import hashlib
import json
import shutil
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from accounts.models import Membership, Project, User
from authoring.models import Document, EnvTask, World
from demo.content import DATA_DIR
from llm.models import ModelCall, ModelEndpoint
from llm.scripted import LABEL
from rollouts.models import Rollout, RolloutBatch, RolloutStatus, Step, StepKind
from workspace.models import Overlay


def counts() -> tuple:
    models = (User, Project, Membership, World, Document, EnvTask, ModelEndpoint, RolloutBatch, Rollout, Step, ModelCall, Overlay)
    return tuple(m.objects.count() for m in models)


def test_seed_demo_is_idempotent_and_its_printed_logins_work(db, settings, tmp_path, client):
    settings.VAR_DIR = tmp_path
    out = StringIO()
    call_command("seed_demo", stdout=out)
    first = counts()
    call_command("seed_demo", stdout=StringIO())
    assert counts() == first
    logins = {row["username"]: row["password"] for row in json.loads((tmp_path / "demo_logins.json").read_text())}
    assert set(logins) == {"demo-author", "demo-reviewer", "demo-admin"}
    assert logins["demo-author"] in out.getvalue()  # printed, and the same as stored
    assert (tmp_path / "demo_logins.json").stat().st_mode & 0o777 == 0o600
    response = client.post(reverse("login"), {"username": "demo-reviewer", "password": logins["demo-reviewer"]})
    assert response.status_code == 302
    endpoint = ModelEndpoint.objects.get()
    assert endpoint.is_scripted and "scripted" in str(endpoint)
    project = Project.objects.get(slug="corporate-law-ma")
    assert project.name == "Corporate law — M&A" and project.env_tasks.get().rubric_versions.get().criteria.count() >= 3


def test_every_demo_document_renders_as_its_real_file(db, settings, tmp_path):
    import io

    import openpyxl

    from authoring.rendering import render_file

    settings.VAR_DIR = tmp_path
    call_command("seed_demo", stdout=StringIO())
    for document in Document.objects.all():
        rendered = render_file(document.kind, document.format, document.content, document.metadata, path=document.path)
        assert rendered.data, document.path
        if document.format == "xlsx":
            sheet = openpyxl.load_workbook(io.BytesIO(rendered.data), data_only=True)["Cap table"]
            assert sheet["C8"].value == 10_000_000 and sheet["D8"].value == 1


def test_seed_demo_adds_one_finished_batch_of_labelled_scripted_trials(db, settings, tmp_path, client):
    settings.VAR_DIR = tmp_path
    out = StringIO()
    call_command("seed_demo", stdout=out)
    assert "scripted sample model" in out.getvalue()
    first = counts()
    again = StringIO()
    call_command("seed_demo", stdout=again)
    assert counts() == first and "trial rollouts" not in again.getvalue()  # nothing added, nothing run again

    env_task = EnvTask.objects.get()
    batch = RolloutBatch.objects.get()
    assert batch.env_task == env_task and batch.created_by.username == "demo-author"
    assert batch.endpoint_scripted and batch.endpoint.is_scripted and batch.endpoint_name == "Scripted sample model"
    assert batch.task_snapshot["prompt"] == env_task.prompt and batch.rubric_version.criteria.count() == 6
    rollouts = list(batch.rollouts.order_by("index"))
    assert len(rollouts) == 4 and {r.status for r in rollouts} == {RolloutStatus.COMPLETED}
    for rollout in rollouts:
        steps = list(rollout.steps.order_by("index"))
        # The scripted routine: list the files, read the first, answer; every model message labelled.
        assert [(s.kind, s.tool_name) for s in steps] == [
            (StepKind.MODEL, ""), (StepKind.TOOL, "list_files"), (StepKind.MODEL, ""), (StepKind.TOOL, "read_file"), (StepKind.MODEL, ""),
        ]
        assert all(s.text.startswith(LABEL) for s in steps if s.kind == StepKind.MODEL)
        assert not any(s.is_error for s in steps) and "US$48,000,000" in steps[3].text  # it read the LOI
        assert rollout.final_answer.startswith(LABEL) and rollout.final_answer == steps[-1].text
        assert rollout.input_tokens > 0 and rollout.overlay is not None and rollout.finished_at is not None
    assert ModelCall.objects.filter(endpoint=batch.endpoint, purpose="rollout", outcome="ok").count() == 4 * 3
    # The model pickers name the demo's endpoint once as what it is (its name says it already).
    client.force_login(batch.created_by)
    panel = client.get(reverse("task-trials", args=[env_task.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert ">Scripted sample model — not a real model<" in panel and "model — scripted sample model" not in panel


def test_the_demo_is_seeded_from_its_data_files_exactly(db, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    call_command("seed_demo", stdout=StringIO())
    world_dir, task_dir = DATA_DIR / "world", DATA_DIR / "task"
    listed = json.loads((world_dir / "world.json").read_text())["documents"]
    world = World.objects.get()
    seeded = list(world.documents.order_by("position").values_list("path", "kind", "content", "metadata", "brief"))
    assert seeded == [
        (row["path"], row["kind"], (world_dir / row["content_file"]).read_text(), row.get("metadata", {}), row["brief"]) for row in listed
    ]
    chat = world.documents.get(kind="chat")
    assert chat.content and not chat.content.endswith("\n")  # nothing added: the file has no final newline
    assert world.outline == (world_dir / "outline.md").read_text()
    env_task = EnvTask.objects.get()
    assert env_task.prompt == (task_dir / "prompt.md").read_text()
    assert env_task.reference_answer == (task_dir / "reference_answer.md").read_text()
    # Its input file, stored byte for byte, which the demo's agent finds beside the data room.
    checklist = task_dir / "inputs" / "Acme change-of-control checklist.md"
    (input_file,) = env_task.input_files.all()
    assert (input_file.path, input_file.sha256) == ("Inputs/Acme change-of-control checklist.md",
                                                     hashlib.sha256(checklist.read_bytes()).hexdigest())
    with input_file.file.open("rb") as stored:
        assert stored.read() == checklist.read_bytes()
    assert "Acme's legal team asks for these" in input_file.content


def test_seed_demo_reads_an_edited_copy_of_the_data_folder(db, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    data = shutil.copytree(DATA_DIR, tmp_path / "data")
    (data / "world" / "Deal" / "Letter of intent.md").write_text("LETTER OF INTENT\n\nEdited for this test.\n")
    world_json = json.loads((data / "world" / "world.json").read_text())
    world_json["documents"][3]["metadata"]["subject"] = "RE: Northwind, edited"
    (data / "world" / "world.json").write_text(json.dumps(world_json))
    call_command("seed_demo", data=data, stdout=StringIO())
    assert Document.objects.get(path="Deal/Letter of intent.docx").content == "LETTER OF INTENT\n\nEdited for this test.\n"
    assert Document.objects.get(path=world_json["documents"][3]["path"]).metadata["subject"] == "RE: Northwind, edited"


def test_seed_demo_refuses_a_data_folder_with_a_misspelt_key_and_creates_nothing(db, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    data = shutil.copytree(DATA_DIR, tmp_path / "data")
    task_json = json.loads((data / "task" / "task.json").read_text())
    task_json["criteria"][0]["explantion"] = task_json["criteria"][0].pop("explanation")
    (data / "task" / "task.json").write_text(json.dumps(task_json))
    with pytest.raises(CommandError, match="explantion"):
        call_command("seed_demo", data=data, stdout=StringIO())
    assert counts() == (0,) * len(counts()) and not (tmp_path / "demo_logins.json").exists()
