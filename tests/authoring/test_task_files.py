"""A task's input files: the services (who may add, replace and remove, what is refused)
and the task editor's "Input files" section, through the page."""

import hashlib

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import Http404
from django.urls import reverse

from authoring.models import EnvTaskStatus, TaskInputFile
from authoring.services import env_task_set_status, env_task_snapshot
from authoring.services.task_files import (
    task_file_name,
    task_input_file_add_bytes,
    task_input_file_remove,
    task_input_files_add,
)
from authoring.services.uploads import MAX_UPLOAD_BYTES
from core.exceptions import ApplicationError, PermissionRefused

FIGURES = b"quarter,revenue\nQ1,120\nQ2,135\n"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def upload(name: str = "figures.csv", data: bytes = FIGURES) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="text/csv")


def stored_bytes(sha256: str) -> bytes:
    with default_storage.open(task_file_name(sha256), "rb") as handle:
        return handle.read()


# --- services -------------------------------------------------------------------------------------


def test_an_author_adds_files_under_a_folder_stored_by_their_sha256(team, env_task):
    added = task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload(), upload("notes.md", b"# Notes\n")],
                                 folder="Inputs")
    assert [f.path for f in added] == ["Inputs/figures.csv", "Inputs/notes.md"]
    figures = TaskInputFile.objects.get(env_task=env_task, path="Inputs/figures.csv")
    assert (figures.size, figures.sha256, figures.format) == (len(FIGURES), hashlib.sha256(FIGURES).hexdigest(), "csv")
    assert figures.file.name == f"task-files/{figures.sha256}" and stored_bytes(figures.sha256) == FIGURES
    assert "Q2" in figures.content and figures.created_by == team.author


def test_replace_keeps_the_old_bytes_for_the_frozen_version_and_remove_keeps_them_too(team, env_task):
    task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload()])
    frozen = env_task_snapshot(env_task=env_task, rubric_version=env_task.rubric_versions.get())["task"]["input_files"]
    assert frozen == [{"path": "figures.csv", "size": len(FIGURES), "sha256": hashlib.sha256(FIGURES).hexdigest()}]

    newer = b"quarter,revenue\nQ1,121\n"
    (replaced,) = task_input_files_add(env_task=env_task, user=team.author2, uploaded_files=[upload(data=newer)], replace=True)
    assert (replaced.path, replaced.sha256, replaced.size) == ("figures.csv", hashlib.sha256(newer).hexdigest(), len(newer))
    assert stored_bytes(frozen[0]["sha256"]) == FIGURES and stored_bytes(replaced.sha256) == newer

    task_input_file_remove(input_file=replaced, user=team.author)
    assert not env_task.input_files.exists()
    assert stored_bytes(replaced.sha256) == newer  # a version that named it still finds it


def test_a_reviewer_and_another_projects_author_are_refused(team, other_team, env_task):
    with pytest.raises(PermissionRefused):
        task_input_files_add(env_task=env_task, user=team.reviewer, uploaded_files=[upload()])
    with pytest.raises(Http404):
        task_input_files_add(env_task=env_task, user=other_team.author, uploaded_files=[upload()])
    (figures,) = task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload()])
    with pytest.raises(PermissionRefused):
        task_input_file_remove(input_file=figures, user=team.reviewer)
    with pytest.raises(Http404):
        task_input_files_add(env_task=env_task, user=other_team.author, uploaded_files=[upload(data=b"a,b\n1,2\n")], replace=True)
    assert list(env_task.input_files.values_list("path", "sha256")) == [("figures.csv", hashlib.sha256(FIGURES).hexdigest())]


@pytest.mark.parametrize("folder", ["../outside", "Inputs/../..", "a//b"])
def test_a_bad_folder_is_refused_and_nothing_is_added(team, env_task, folder):
    with pytest.raises(ApplicationError, match="not a valid data-room path"):
        task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload()], folder=folder)
    assert not env_task.input_files.exists()


def test_a_too_big_file_refuses_the_whole_upload(team, env_task):
    too_big = upload("big.csv", b"a,b\n" + b"1,2\n" * (MAX_UPLOAD_BYTES // 4))
    with pytest.raises(ApplicationError, match="larger than 20 MB"):
        task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload(), too_big])
    assert not env_task.input_files.exists()


def test_a_duplicate_path_is_refused_and_the_first_file_is_kept(team, env_task):
    task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload()])
    with pytest.raises(ApplicationError, match=r"already has an input file at 'figures\.csv'"):
        task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload(data=b"x,y\n1,2\n")])
    with pytest.raises(ApplicationError, match=r"Two of the files would land at 'Inputs/a\.md'"):
        task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload("a.md", b"one"), upload("a.md", b"two")],
                             folder="Inputs")
    assert list(env_task.input_files.values_list("path", "size")) == [("figures.csv", len(FIGURES))]


def test_an_upload_with_replace_replaces_the_files_at_its_paths_and_adds_the_others(team, env_task):
    [first] = task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload()])
    newer = b"quarter,revenue\nQ1,125\n"
    rows = task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload(data=newer), upload("notes.md", b"Notes.")],
                                replace=True)
    assert [(r.path, r.size) for r in rows] == [("figures.csv", len(newer)), ("notes.md", 6)]
    assert rows[0].pk == first.pk and stored_bytes(rows[0].sha256) == newer  # the same file, its new bytes
    assert stored_bytes(first.sha256) == FIGURES  # the old bytes stay for the versions that name them
    assert [(f.path, f.size) for f in env_task.input_files.all()] == [("figures.csv", len(newer)), ("notes.md", 6)]
    assert "Q1,125" in env_task.input_files.get(path="figures.csv").content  # what the agent reads now


def test_an_unreadable_file_is_refused_naming_it(team, env_task):
    with pytest.raises(ApplicationError, match=r"tool\.exe: .*exe"):
        task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload("tool.exe", b"MZ\x00\x01binary")])
    assert not env_task.input_files.exists()


def test_a_task_in_review_cannot_change_its_files(team, env_task):
    env_task_set_status(env_task=env_task, actor=team.author, to_status=EnvTaskStatus.IN_REVIEW)
    with pytest.raises(ApplicationError, match="in review"):
        task_input_file_add_bytes(env_task=env_task, user=team.author, path="figures.csv", data=FIGURES)
    assert not env_task.input_files.exists()


# --- the task editor ------------------------------------------------------------------------------


def test_the_editor_shows_the_section_and_says_what_input_files_are_for(client, team, env_task):
    client.force_login(team.author)
    page = client.get(reverse("task-editor", args=[env_task.pk])).content.decode()
    assert 'id="input-files"' in page and "Input files" in page
    assert "Files the agent receives with this task, laid over the world's files" in page
    assert reverse("task-input-files-upload", args=[env_task.pk]) in page


def test_upload_and_remove_through_the_page_without_js(client, team, env_task):
    client.force_login(team.author)
    answer = client.post(reverse("task-input-files-upload", args=[env_task.pk]), {"files": [upload()], "folder": "Inputs"})
    assert answer.status_code == 302
    page = client.get(reverse("task-editor", args=[env_task.pk])).content.decode()
    figures = env_task.input_files.get()
    assert "Inputs/figures.csv" in page and reverse("task-input-file-download", args=[figures.pk]) in page
    download = client.get(reverse("task-input-file-download", args=[figures.pk]))
    assert download.content == FIGURES and "attachment" in download["Content-Disposition"]

    confirm = client.get(reverse("task-input-file-delete", args=[figures.pk]))
    assert confirm.status_code == 200 and "Remove the input file Inputs/figures.csv?" in confirm.content.decode()
    assert env_task.input_files.exists()  # asking removes nothing
    assert client.post(reverse("task-input-file-delete", args=[figures.pk])).status_code == 302
    assert not env_task.input_files.exists()


def test_htmx_upload_answers_the_section_and_a_refusal_keeps_the_files(client, team, env_task):
    client.force_login(team.author)
    url = reverse("task-input-files-upload", args=[env_task.pk])
    fragment = client.post(url, {"files": [upload()]}, headers={"HX-Request": "true"})
    text = fragment.content.decode()
    assert fragment.status_code == 200 and text.lstrip().startswith('<section id="input-files"') and "figures.csv" in text
    refused = client.post(url, {"files": [upload()]}, headers={"HX-Request": "true"})
    assert refused.status_code == 422 and "already has an input file" in refused.content.decode()
    assert "Replace files already at these paths" in refused.content.decode()  # the way out, named and offered
    assert env_task.input_files.count() == 1
    replaced = client.post(url, {"files": [upload(data=b"a,b\n1,2\n")], "replace": "on"}, headers={"HX-Request": "true"})
    assert replaced.status_code == 200 and "Uploaded 1 input file: figures.csv." in replaced.content.decode()
    assert env_task.input_files.get().content == "a,b\n1,2\n"


def test_a_reader_without_write_permission_sees_the_list_read_only(client, team, env_task):
    task_input_files_add(env_task=env_task, user=team.author, uploaded_files=[upload()])
    figures = env_task.input_files.get()
    client.force_login(team.reviewer)
    page = client.get(reverse("task-editor", args=[env_task.pk])).content.decode()
    assert "figures.csv" in page and reverse("task-input-file-download", args=[figures.pk]) in page
    assert reverse("task-input-files-upload", args=[env_task.pk]) not in page
    assert reverse("task-input-file-delete", args=[figures.pk]) not in page
    refused = client.post(reverse("task-input-file-delete", args=[figures.pk]), headers={"HX-Request": "true"})
    assert refused.status_code == 403 and env_task.input_files.exists()
