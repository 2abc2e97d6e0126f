"""The whole product loop through the API alone, as an integrating client would run it:
author builds a world and a task → submits → a reviewer claims and approves → the
admin builds a pack → downloads it and checks every file against the manifest."""

import hashlib
import io
import json
import zipfile

from rest_framework.test import APIClient

from authoring.models import EnvTask, EnvTaskStatus
from packs.models import Pack, PackStatus
from packs.services import pack_build
from reviews.models import Review, Submission, SubmissionStatus
from tests import factories


class RecordingClient:
    """Wraps an APIClient and keeps every response body, so the test can check that no
    token or password ever leaks outside the token endpoint."""

    def __init__(self, client: APIClient, seen: list[bytes]) -> None:
        self.client, self.seen = client, seen

    def __getattr__(self, method: str):
        def call(*args, **kwargs):
            response = getattr(self.client, method)(*args, format="json", **kwargs) if method != "get" else self.client.get(*args, **kwargs)
            if response.streaming:
                # Read to the end, which closes it; response.close() by hand would fire
                # request_finished and close the test's database connection.
                body = b"".join(response.streaming_content)
                response.body = body
            else:
                body = response.content
            self.seen.append(body)
            return response

        return call


def _sign_in(username: str) -> tuple[APIClient, str]:
    response = APIClient().post("/api/auth/token/", {"username": username, "password": factories.PASSWORD}, format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client, token


def test_author_to_pack_download(team, django_capture_on_commit_callbacks):
    seen: list[bytes] = []
    author_client, author_token = _sign_in(team.author.username)
    reviewer_client, reviewer_token = _sign_in(team.reviewer.username)
    admin_client, admin_token = _sign_in(team.admin.username)
    author, reviewer, admin = (RecordingClient(c, seen) for c in (author_client, reviewer_client, admin_client))

    # Author: world → document → task → criteria → submit.
    world = author.post("/api/worlds/", {"project": team.project.pk, "title": "Acme buys Beta", "outline": "Acme is buying Beta for $12m."})
    assert world.status_code == 201
    world_id = world.json()["id"]
    document = author.post(f"/api/worlds/{world_id}/documents/", {"path": "Deal/LOI.md", "content": "Price: $12m. Closing 31 March."})
    assert document.status_code == 201
    task = author.post(
        "/api/tasks/", {"world": world_id, "title": "State the price", "prompt": "What does Acme pay?", "reference_answer": "$12m"}
    )
    assert task.status_code == 201
    task_id = task.json()["id"]
    rubric = author.get(f"/api/tasks/{task_id}/rubric/").json()
    added = author.post(
        f"/api/tasks/{task_id}/rubric/criteria/", {"revision": rubric["revision"], "text": "Says $12m", "points": 5, "tag": "essential"}
    )
    assert added.status_code == 201
    penalty = author.post(
        f"/api/tasks/{task_id}/rubric/criteria/",
        {"revision": added.json()["rubric"]["revision"], "text": "Invents a price", "points": -5, "tag": "pitfall"},
    )
    assert penalty.json()["rubric"]["total_positive_points"] == 5
    submitted = author.post(f"/api/tasks/{task_id}/submit/")
    assert submitted.status_code == 201
    submission_id = submitted.json()["id"]
    assert submitted.json()["snapshot"]["world"]["documents"][0]["content"] == "Price: $12m. Closing 31 March."
    assert EnvTask.objects.get(pk=task_id).status == EnvTaskStatus.IN_REVIEW

    # Reviewer: claim the next item (ours), approve it.
    claimed = reviewer.post("/api/review-queue/claim-next/")
    assert claimed.status_code == 200 and claimed.json()["id"] == submission_id
    checklist = reviewer.get(f"/api/projects/{team.project.pk}/review-policy/").json()["checklist"]
    assert len(checklist) == 5 and all(item["id"] for item in checklist)  # saved with the project's first submission
    answers = [{"item": item["id"], "passed": True, "note": ""} for item in checklist]
    approved = reviewer.post(f"/api/submissions/{submission_id}/decision/",
                             {"decision": "approve", "comment": "Correct and complete.", "checklist": answers})
    assert approved.status_code == 200 and approved.json()["status"] == "approved"
    assert Submission.objects.get(pk=submission_id).status == SubmissionStatus.APPROVED
    assert Review.objects.get(submission_id=submission_id).reviewer == team.reviewer
    assert EnvTask.objects.get(pk=task_id).status == EnvTaskStatus.APPROVED

    # Admin: create the pack; the build is queued after commit (a worker runs it in
    # production, tested elsewhere), so run it here directly.
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        created = admin.post("/api/packs/", {"project": team.project.pk, "name": "M&A v1", "submission_ids": [submission_id]})
    assert created.status_code == 201 and created.json()["status"] == "queued"
    assert len(callbacks) == 1
    pack_id = created.json()["id"]
    pack_build(pack_id=pack_id)
    assert Pack.objects.get(pk=pack_id).status == PackStatus.READY
    pack = admin.get(f"/api/packs/{pack_id}/").json()
    assert pack["status"] == "ready"

    download = admin.get(pack["download_url"])
    assert download.status_code == 200
    assert download["Content-Type"] == "application/zip"
    assert download["Content-Disposition"].startswith("attachment;")
    assert download["X-Content-Type-Options"] == "nosniff"
    assert hashlib.sha256(download.body).hexdigest() == pack["sha256"]
    with zipfile.ZipFile(io.BytesIO(download.body)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        assert manifest["counts"] == {"tasks": 1, "worlds": 1, "criteria": 2}
        assert {f["path"] for f in manifest["files"]} | {"manifest.json"} == set(archive.namelist())
        for entry in manifest["files"]:
            data = archive.read(entry["path"])
            assert hashlib.sha256(data).hexdigest() == entry["sha256"]
            assert len(data) == entry["bytes"]
        line = json.loads(archive.read("taskwright/tasks.jsonl").decode().strip())
        assert (line["task_id"], line["prompt"]) == (manifest["tasks"][0]["task_id"], "What does Acme pay?")
        assert manifest["tasks"][0]["submission_id"] == submission_id
        assert [c["text"] for c in line["rubric"]["criteria"]] == ["Says $12m", "Invents a price"]
        world = zipfile.ZipFile(io.BytesIO(archive.read(f"world_files_zipped/world-{world_id}.zip")))
        assert world.read("filesystem/Deal/LOI.md") == b"Price: $12m. Closing 31 March."
        [sample] = [json.loads(row) for row in archive.read("healthbench.jsonl").decode().splitlines()]
        assert [item["points"] for item in sample["rubrics"]] == [c["points"] for c in line["rubric"]["criteria"]]

    # Nothing outside the token endpoint ever showed a token or a password.
    leaks = [token.encode() for token in (author_token, reviewer_token, admin_token)] + [factories.PASSWORD.encode(), b"pbkdf2"]
    for body in seen:
        for secret in leaks:
            assert secret not in body
