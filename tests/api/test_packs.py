"""Packs through the API: admins only, queued on commit, downloaded as an attachment."""

import hashlib
import io
import json
import zipfile

from packs.models import Pack, PackStatus
from packs.services import pack_build, pack_create
from tests.api.conftest import approved_submission


def test_admin_creates_a_pack_queued_for_after_commit(team, api_for, django_capture_on_commit_callbacks):
    submission = approved_submission(team)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api_for(team.admin).post(
            "/api/packs/", {"project": team.project.pk, "name": "Launch", "submission_ids": [submission.pk]}, format="json"
        )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "queued" and body["version"] == 1 and body["submission_ids"] == [submission.pk]
    assert body["download_url"] is None
    pack = Pack.objects.get(pk=body["id"])
    assert (pack.status, pack.created_by, list(pack.submissions.all())) == (PackStatus.QUEUED, team.admin, [submission])
    assert len(callbacks) == 1  # the build is queued only once the pack is committed


def test_pack_create_refuses_what_the_service_refuses(team, other_team, api_for):
    submission = approved_submission(team)
    admin = api_for(team.admin)
    empty = admin.post("/api/packs/", {"project": team.project.pk, "name": "Empty", "submission_ids": []}, format="json")
    assert empty.status_code == 400 and "at least one" in empty.json()["detail"]
    theirs = approved_submission(other_team)
    mixed = admin.post(
        "/api/packs/", {"project": team.project.pk, "name": "Mixed", "submission_ids": [submission.pk, theirs.pk]}, format="json"
    )
    assert mixed.status_code == 400 and "Only approved tasks of this project" in mixed.json()["detail"]
    # Not a member of the other project: 404, as if it did not exist.
    foreign = admin.post("/api/packs/", {"project": other_team.project.pk, "name": "X", "submission_ids": [theirs.pk]}, format="json")
    assert foreign.status_code == 404
    bad_ids = admin.post("/api/packs/", {"project": team.project.pk, "name": "X", "submission_ids": ["one"]}, format="json")
    assert bad_ids.status_code == 400
    assert not Pack.objects.exists()


def test_non_admins_can_neither_create_nor_list_packs(team, api_for):
    submission = approved_submission(team)
    pack = pack_create(project_id=team.project.pk, user=team.admin, name="Admin pack", submission_ids=[submission.pk])
    for user in (team.author, team.reviewer):
        client = api_for(user)
        created = client.post("/api/packs/", {"project": team.project.pk, "name": "Mine", "submission_ids": [submission.pk]}, format="json")
        assert created.status_code == 403
        assert "cannot build packs" in created.json()["detail"]
        assert client.get("/api/packs/").json() == {"count": 0, "next": None, "previous": None, "results": []}
        assert client.get(f"/api/packs/?project={team.project.pk}").json()["count"] == 0
        assert client.get(f"/api/packs/{pack.pk}/").status_code == 404
        assert client.get(f"/api/packs/{pack.pk}/download/").status_code == 404
    assert list(Pack.objects.values_list("name", flat=True)) == ["Admin pack"]
    listed = api_for(team.admin).get("/api/packs/").json()
    assert [p["id"] for p in listed["results"]] == [pack.pk]


def test_download_before_ready_is_a_409(team, api_for):
    submission = approved_submission(team)
    pack = pack_create(project_id=team.project.pk, user=team.admin, name="Not yet", submission_ids=[submission.pk])
    response = api_for(team.admin).get(f"/api/packs/{pack.pk}/download/")
    assert response.status_code == 409
    assert response.json() == {"detail": "This pack is still queued: download it once it is ready."}
    Pack.objects.filter(pk=pack.pk).update(status=PackStatus.FAILED, error="Boom")
    failed = api_for(team.admin).get(f"/api/packs/{pack.pk}/download/", HTTP_ACCEPT="application/zip")
    assert failed.status_code == 409 and "failed" in failed.json()["detail"]


def test_download_a_built_pack(team, api_for):
    submission = approved_submission(team)
    pack = pack_create(project_id=team.project.pk, user=team.admin, name="Built", submission_ids=[submission.pk])
    pack_build(pack_id=pack.pk)
    client = api_for(team.admin)
    detail = client.get(f"/api/packs/{pack.pk}/").json()
    assert detail["status"] == "ready" and detail["progress"] == 100
    assert detail["download_url"] == f"/api/packs/{pack.pk}/download/"

    response = client.get(detail["download_url"], HTTP_ACCEPT="application/zip")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == f'attachment; filename="{pack.filename}"'
    data = b"".join(response.streaming_content)  # read to the end: that closes the file
    assert hashlib.sha256(data).hexdigest() == detail["sha256"]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        assert {k: v for k, v in manifest.items() if k != "tasks"} == detail["manifest"]  # the per-task list is in the zip only
        for entry in manifest["files"]:
            assert hashlib.sha256(archive.read(entry["path"])).hexdigest() == entry["sha256"]
