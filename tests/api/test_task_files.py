"""A task's input files through the API: list, upload, read, delete, and who may."""

import hashlib

from django.core.files.uploadedfile import SimpleUploadedFile

from authoring.models import TaskInputFile

FIGURES = b"quarter,revenue\nQ1,120\nQ2,135\n"


def _upload(client, env_task, *files, folder=""):
    return client.post(f"/api/tasks/{env_task.pk}/input-files/", {"files": list(files), "folder": folder}, format="multipart")


def test_an_author_uploads_lists_reads_and_deletes_input_files(api_for, team, env_task):
    client = api_for(team.author)
    answer = _upload(client, env_task, SimpleUploadedFile("figures.csv", FIGURES), SimpleUploadedFile("brief.md", b"# Brief\n"),
                     folder="Inputs")
    assert answer.status_code == 201, answer.content
    added = answer.json()
    assert [(f["path"], f["size"], f["format"]) for f in added] == [("Inputs/figures.csv", len(FIGURES), "csv"),
                                                                   ("Inputs/brief.md", 8, "md")]
    assert added[0]["sha256"] == hashlib.sha256(FIGURES).hexdigest() and added[0]["created_by"] == team.author.username

    listed = client.get(f"/api/tasks/{env_task.pk}/input-files/").json()
    assert [f["path"] for f in listed["results"]] == ["Inputs/brief.md", "Inputs/figures.csv"] and listed["count"] == 2
    figures = added[0]["id"]
    assert client.get(f"/api/task-input-files/{figures}/").json()["path"] == "Inputs/figures.csv"
    content = client.get(f"/api/task-input-files/{figures}/content/")
    assert content.status_code == 200 and content.content == FIGURES

    assert client.delete(f"/api/task-input-files/{figures}/").status_code == 204
    assert list(TaskInputFile.objects.filter(env_task=env_task).values_list("path", flat=True)) == ["Inputs/brief.md"]


def test_refusals_answer_400_and_add_nothing(api_for, team, env_task):
    client = api_for(team.author)
    assert _upload(client, env_task, SimpleUploadedFile("figures.csv", FIGURES)).status_code == 201
    duplicate = _upload(client, env_task, SimpleUploadedFile("other.md", b"x"), SimpleUploadedFile("figures.csv", b"a,b\n"))
    assert duplicate.status_code == 400 and "already has an input file at 'figures.csv'" in duplicate.json()["detail"]
    bad_folder = _upload(client, env_task, SimpleUploadedFile("x.md", b"x"), folder="../up")
    assert bad_folder.status_code == 400 and "not a valid data-room path" in bad_folder.json()["detail"]
    empty = client.post(f"/api/tasks/{env_task.pk}/input-files/", {}, format="multipart")
    assert empty.status_code == 400 and empty.json()["detail"].startswith("Send one or more files")
    assert list(TaskInputFile.objects.filter(env_task=env_task).values_list("path", flat=True)) == ["figures.csv"]
    replaced = client.post(f"/api/tasks/{env_task.pk}/input-files/", {"files": [SimpleUploadedFile("figures.csv", b"a,b\n")],
                                                                       "replace": "true"}, format="multipart")
    assert replaced.status_code == 201 and [(f["path"], f["size"]) for f in replaced.json()] == [("figures.csv", 4)]
    assert TaskInputFile.objects.get(env_task=env_task).size == 4


def test_a_reviewer_reads_but_cannot_write_and_another_project_sees_nothing(api_for, team, other_team, env_task):
    added = _upload(api_for(team.author), env_task, SimpleUploadedFile("figures.csv", FIGURES)).json()[0]
    reviewer = api_for(team.reviewer)
    assert [f["path"] for f in reviewer.get(f"/api/tasks/{env_task.pk}/input-files/").json()["results"]] == ["figures.csv"]
    assert _upload(reviewer, env_task, SimpleUploadedFile("more.md", b"x")).status_code == 403
    assert reviewer.delete(f"/api/task-input-files/{added['id']}/").status_code == 403

    outsider = api_for(other_team.author)
    assert outsider.get(f"/api/tasks/{env_task.pk}/input-files/").status_code == 404
    assert outsider.get(f"/api/task-input-files/{added['id']}/content/").status_code == 404
    assert outsider.delete(f"/api/task-input-files/{added['id']}/").status_code == 404
    assert _upload(outsider, env_task, SimpleUploadedFile("more.md", b"x")).status_code == 404
    assert TaskInputFile.objects.filter(env_task=env_task).count() == 1
