"""The admin's pack pages and API: choose formats, open a pack, download one format, see
what changed since the last version, import a pack; nobody else sees any of it."""

import hashlib
import io
import json
import zipfile

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from accounts.models import Role, User
from authoring import services as authoring_services
from core.exceptions import ApplicationError
from packs.models import Pack, PackStatus
from packs.services import pack_build, pack_build_again, pack_create
from tests import factories
from tests.packs.conftest import approve


def _admin(project) -> User:
    return project.memberships.get(role=Role.ADMIN).user


def _built(project, admin, submission_ids, formats=None) -> Pack:
    pack = pack_create(project_id=project.pk, user=admin, name="Release", submission_ids=submission_ids, formats=formats)
    pack_build(pack_id=pack.pk)
    pack.refresh_from_db()
    assert pack.status == PackStatus.READY, pack.error
    return pack


def test_the_admin_picks_formats_opens_the_pack_and_downloads_one_format(demo_pack, client):
    admin = _admin(demo_pack.project)
    client.force_login(admin)
    page = client.get(reverse("pack-list", args=[demo_pack.project.pk]))
    assert page.status_code == 200
    for label in ("APEX-Agents / Archipelago", "HealthBench-style rubric JSONL", "Inspect AI task folder", "Hugging Face dataset"):
        assert label in page.content.decode()
    response = client.post(reverse("pack-list", args=[demo_pack.project.pk]),
                           {"name": "Release", "submissions": [demo_pack.submission.pk], "formats": ["healthbench", "huggingface"]})
    assert response.status_code == 302
    pack = Pack.objects.get()
    assert pack.formats == ["healthbench", "huggingface"]
    pack_build(pack_id=pack.pk)
    detail = client.get(reverse("pack-detail", args=[pack.pk])).content.decode()
    assert "healthbench.jsonl" in detail and "hf/tasks.parquet" in detail and "tasks_and_rubrics.json" not in detail
    assert "first built version" in detail  # nothing to compare with yet
    # The demo's batch is the scripted sample model's: it measures nothing, and its $0 is no cost figure.
    assert "not measured" in detail and "no trials of a real model" in detail and "$0.0000" not in detail
    download = client.get(reverse("pack-download-format", args=[pack.pk, "healthbench"]))
    assert download.status_code == 200 and download["Content-Disposition"].startswith("attachment")
    subset = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    assert subset.namelist() == ["healthbench.jsonl", "README.md", "manifest.json"]  # no world: HealthBench does not read one
    readme = subset.read("README.md")
    assert readme.decode().startswith("# Release v1: HealthBench-style rubric JSONL only\n\nThis download holds one format of the pack")
    listed = {f["path"]: f for f in json.loads(subset.read("manifest.json"))["files"]}
    assert listed["README.md"]["sha256"] == hashlib.sha256(readme).hexdigest()  # the zip still checks against its manifest
    assert client.get(reverse("pack-download-format", args=[pack.pk, "apex"])).status_code == 404  # not in this pack


def test_building_again_shows_what_changed(demo_pack, client):
    admin, author, reviewer = (demo_pack.project.memberships.get(role=r).user for r in (Role.ADMIN, Role.AUTHOR, Role.REVIEWER))
    first = _built(demo_pack.project, admin, [demo_pack.submission.pk], formats=["taskwright"])
    world = demo_pack.env_task.world
    later = factories.env_task(world, author, title="A second task")
    memo = world.documents.filter(kind="file").order_by("path").first()
    authoring_services.document_update(document=memo, user=author, base_revision=memo.revision, content="# Rewritten\n\nNew terms.\n")
    submission = approve(later, author=author, reviewer=reviewer)
    second = pack_create(project_id=demo_pack.project.pk, user=admin, name="Release",
                         submission_ids=[demo_pack.submission.pk, submission.pk], formats=["taskwright"])
    pack_build(pack_id=second.pk)
    client.force_login(admin)
    page = client.get(reverse("pack-detail", args=[second.pk])).content.decode()
    assert f"Compared with <a href=\"{reverse('pack-detail', args=[first.pk])}\">version {first.version}</a>: 1 added, 0 removed" in page
    assert "A second task" in page
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=admin).key}")
    diff = api.get(f"/api/packs/{second.pk}/diff/").json()
    assert [t["title"] for t in diff["added"]] == ["A second task"] and diff["removed"] == [] and diff["unchanged"] == 1
    third = pack_build_again(pack=second, user=admin)
    assert third.version == second.version + 1
    versions = api.get(f"/api/packs/{second.pk}/versions/").json()
    assert [v["version"] for v in versions["results"]] == [third.version, second.version, first.version]


def test_a_changed_world_document_is_named_in_the_diff(team, world, env_task):
    for document in world.documents.all():
        authoring_services.document_update(document=document, user=team.author, base_revision=document.revision, content="Version one.")
    first_submission = approve(env_task, author=team.author, reviewer=team.reviewer)
    first = _built(team.project, team.admin, [first_submission.pk], formats=["taskwright"])
    document = world.documents.order_by("path").first()
    authoring_services.document_update(document=document, user=team.author, base_revision=document.revision, content="Version two.")
    other = factories.env_task(world, team.author, title="Other")
    second = _built(team.project, team.admin, [first_submission.pk, approve(other, author=team.author, reviewer=team.reviewer).pk],
                    formats=["taskwright"])
    from packs.selectors import pack_diff

    diff = pack_diff(pack=second, previous=first)
    assert diff["unchanged"] == 1 and [t["title"] for t in diff["added"]] == ["Other"]  # the first task is frozen on its own world state
    assert first.version < second.version


def test_pack_api_creates_with_formats_and_downloads_a_format(demo_pack):
    admin = _admin(demo_pack.project)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=admin).key}")
    created = api.post("/api/packs/", {"project": demo_pack.project.pk, "name": "API", "submission_ids": [demo_pack.submission.pk],
                                       "formats": ["inspect"]}, format="json")
    assert created.status_code == 201 and created.json()["formats"] == ["inspect"]
    bad = api.post("/api/packs/", {"project": demo_pack.project.pk, "name": "API", "submission_ids": [demo_pack.submission.pk],
                                   "formats": ["zip"]}, format="json")
    assert bad.status_code == 400
    pack_build(pack_id=created.json()["id"])
    body = api.get(f"/api/packs/{created.json()['id']}/").json()
    assert list(body["format_downloads"]) == ["inspect"]
    download = api.get(body["format_downloads"]["inspect"])
    names = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))).namelist()
    assert "inspect/task.py" in names and any(n.startswith("world_files_zipped/") for n in names)


def test_pack_import_through_the_page_and_the_api_and_refusals(demo_pack, client):
    admin = _admin(demo_pack.project)
    pack = _built(demo_pack.project, admin, [demo_pack.submission.pk], formats=["taskwright"])
    with pack.file.open("rb") as handle:
        data = handle.read()
    target = factories.project("Target")
    target_admin, target_author = factories.member(target, Role.ADMIN), factories.member(target, Role.AUTHOR)
    client.force_login(target_admin)
    from django.core.files.uploadedfile import SimpleUploadedFile

    imported = client.post(reverse("pack-import", args=[target.pk]), {"file": SimpleUploadedFile("release.zip", data)})
    assert imported.status_code == 302 and imported["Location"].startswith(reverse("pack-imported", args=[target.pk]))
    page = client.get(imported["Location"])  # a reload of the result imports nothing more
    assert page.status_code == 200 and "1 task now in this project" in page.content.decode()
    assert "on the world imported with it (each world of the pack once)" in page.content.decode()
    client.get(imported["Location"])
    assert target.env_tasks.count() == 1
    # The same pack again (a second upload): refused, saying when it was imported and how to make a copy on purpose.
    again = client.post(reverse("pack-import", args=[target.pk]), {"file": SimpleUploadedFile("release (1).zip", data)})
    assert again.status_code == 400 and "was already imported into this project by" in again.content.decode()
    assert "choose the zip again" in again.content.decode()  # the file box comes back empty: say so
    assert "Nothing was imported" in again.content.decode() and target.env_tasks.count() == 1
    refused = client.post(reverse("pack-import", args=[target.pk]), {"file": SimpleUploadedFile("bad.zip", b"not a zip")})
    assert refused.status_code == 400 and "Nothing was imported" in refused.content.decode()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=target_admin).key}")
    answer = api.post("/api/packs/import/", {"project": target.pk, "file": SimpleUploadedFile("release.zip", data)}, format="multipart")
    assert answer.status_code == 400 and "already imported" in answer.json()["detail"]
    answer = api.post("/api/packs/import/", {"project": target.pk, "file": SimpleUploadedFile("release.zip", data), "again": "true"},
                      format="multipart")
    assert answer.status_code == 201 and len(answer.json()["task_ids"]) == 1
    author_api = APIClient()
    author_api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=target_author).key}")
    refused = author_api.post("/api/packs/import/", {"project": target.pk, "file": SimpleUploadedFile("r.zip", data)}, format="multipart")
    assert refused.status_code == 403 and "cannot import packs" in refused.json()["detail"]
    assert target.env_tasks.count() == 2
    assert "Imported the pack" in client.get(reverse("project-audit", args=[target.pk])).content.decode()
    # another project's admin sees none of these packs
    client.force_login(target_admin)
    assert client.get(reverse("pack-detail", args=[pack.pk])).status_code == 404


def test_world_export_and_import_over_the_api(demo_pack):
    author = demo_pack.project.memberships.get(role=Role.AUTHOR).user
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=author).key}")
    world = demo_pack.env_task.world
    exported = api.get(f"/api/worlds/{world.pk}/export/")
    assert exported.status_code == 200 and exported["Content-Type"] == "application/zip"
    data = b"".join(exported.streaming_content)
    assert ".apps_data/mail/sent.mbox" in zipfile.ZipFile(io.BytesIO(data)).namelist()
    from django.core.files.uploadedfile import SimpleUploadedFile

    imported = api.post("/api/worlds/import/",
                        {"project": demo_pack.project.pk, "file": SimpleUploadedFile("w.zip", data), "title": "Copy"},
                        format="multipart")
    assert imported.status_code == 201 and imported.json()["title"] == "Copy"
    reviewer = demo_pack.project.memberships.get(role=Role.REVIEWER).user
    reviewer_api = APIClient()
    reviewer_api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=reviewer).key}")
    assert reviewer_api.get(f"/api/worlds/{world.pk}/export/").status_code == 403
    assert json.loads(reviewer_api.get(f"/api/worlds/{world.pk}/export/").content)["detail"]


def test_the_measured_difficulty_comes_from_a_real_model_and_names_it(demo_pack, client):
    """A scripted sample model's batch measures nothing about a task: a newer one, all passed,
    does not hide the real model's measurement, on the page or in manifest.json."""
    from tests.reviews.test_evidence import graded_batch

    real = graded_batch(demo_pack.env_task, [1.0, 0.9, 0.2, 0.0])
    scripted = graded_batch(demo_pack.env_task, [1.0, 1.0, 1.0, 1.0])
    type(scripted).objects.filter(pk=scripted.pk).update(endpoint_scripted=True, endpoint_name="Scripted sample model")
    assert real.rubric_version_id == demo_pack.submission.rubric_version_id
    admin = _admin(demo_pack.project)
    pack = _built(demo_pack.project, admin, [demo_pack.submission.pk], formats=["healthbench"])
    with pack.file.open("rb") as handle:
        manifest = json.loads(zipfile.ZipFile(io.BytesIO(handle.read())).read("manifest.json"))
    (task,) = manifest["tasks"]
    assert {key: task["difficulty"][key] for key in ("batch_id", "model", "n", "c", "pass_at_1")} == {
        "batch_id": real.pk, "model": "fake-model", "n": 4, "c": 2, "pass_at_1": 0.5}
    client.force_login(admin)
    detail = client.get(reverse("pack-detail", args=[pack.pk])).content.decode()
    assert "with fake-model" in detail and "Scripted sample model" not in detail


def test_versions_count_per_pack_name_and_build_again_keeps_the_newest_task_set(demo_pack, client):
    """"Bank only" read "version 4" and "the first built version of Bank only" at once (versions
    were counted across the project); Build again from version 1 dropped the task version 2 had
    added."""
    project = demo_pack.project
    admin, author, reviewer = (project.memberships.get(role=r).user for r in (Role.ADMIN, Role.AUTHOR, Role.REVIEWER))
    other = approve(factories.env_task(demo_pack.env_task.world, author, title="Landlord consent"), author=author, reviewer=reviewer)
    first = _built(project, admin, [demo_pack.submission.pk], formats=["taskwright"])
    second = _built(project, admin, [demo_pack.submission.pk, other.pk], formats=["taskwright"])
    bank = pack_create(project_id=project.pk, user=admin, name="Bank only", submission_ids=[other.pk], formats=["taskwright"])
    assert (first.version, second.version, bank.version) == (1, 2, 1)
    again = pack_build_again(pack=first, user=admin)
    assert again.version == 3 and set(again.submissions.values_list("pk", flat=True)) == {demo_pack.submission.pk, other.pk}
    pack_build(pack_id=again.pk)
    client.force_login(admin)
    page = client.get(reverse("pack-detail", args=[second.pk])).content.decode()
    assert "Build again as version 4" in page


def test_the_build_form_ticks_the_newest_version_of_each_task_and_keeps_the_admins_ticks(demo_pack, client):
    """With v1 and v2 of a task approved, the form ticked both, and building with its defaults
    was always refused ("a pack holds one version of each task"); after any refusal every box
    came back ticked, formats too."""
    project = demo_pack.project
    admin, author, reviewer = (project.memberships.get(role=r).user for r in (Role.ADMIN, Role.AUTHOR, Role.REVIEWER))
    task = factories.env_task(demo_pack.env_task.world, author, title="Landlord consent")
    v1 = approve(task, author=author, reviewer=reviewer)
    task.refresh_from_db()
    authoring_services.env_task_start_new_version(env_task=task, user=author)
    task.refresh_from_db()
    authoring_services.env_task_update(env_task=task, user=author, base_revision=task.revision, title=task.title,
                                       prompt=task.prompt + " Cite the clause.", deliverable_kind=task.deliverable_kind,
                                       reference_answer=task.reference_answer)
    v2 = approve(task, author=author, reviewer=reviewer)
    client.force_login(admin)
    page = client.get(reverse("pack-list", args=[project.pk])).content.decode()
    assert f'id="sub-{v2.pk}" checked' in page and f'id="sub-{v1.pk}">' in page
    assert "(older: v2 is approved too; a pack holds one version of a task)" in page
    assert all(f'id="format-{key}" checked' in page for key in ("apex", "healthbench", "inspect", "huggingface", "taskwright"))

    refused = client.post(reverse("pack-list", args=[project.pk]), {"name": "", "submissions": [v1.pk],
                                                                   "formats": ["healthbench"]})
    page = refused.content.decode()
    assert refused.status_code == 422
    assert f'id="sub-{v1.pk}" checked' in page and f'id="sub-{v2.pk}">' in page
    assert 'id="format-healthbench" checked' in page and 'id="format-apex">' in page

    # Built by default, the pack holds v2; the list shows the newest build first.
    client.post(reverse("pack-list", args=[project.pk]), {"name": "Release", "submissions": [v2.pk], "formats": ["taskwright"]})
    client.post(reverse("pack-list", args=[project.pk]), {"name": "Second", "submissions": [v2.pk], "formats": ["taskwright"]})
    page = client.get(reverse("pack-list", args=[project.pk])).content.decode()
    assert page.index("Second v1") < page.index("Release v1")


def test_the_diff_names_formats_dropped_and_build_again_takes_the_formats_of_the_last_build(demo_pack, client):
    project = demo_pack.project
    admin = _admin(project)
    first = _built(project, admin, [demo_pack.submission.pk], formats=["healthbench", "taskwright"])
    second = _built(project, admin, [demo_pack.submission.pk], formats=["taskwright"])
    client.force_login(admin)
    page = client.get(reverse("pack-detail", args=[second.pk])).content.decode()
    assert "removed HealthBench-style rubric JSONL</strong> (not in this version)" in page
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=admin).key}")
    assert api.get(f"/api/packs/{second.pk}/diff/").json()["formats"] == {"added": [], "removed": ["healthbench"]}
    # A try with fewer formats that failed does not narrow the next build.
    failed = pack_create(project_id=project.pk, user=admin, name="Release", submission_ids=[demo_pack.submission.pk], formats=["apex"])
    Pack.objects.filter(pk=failed.pk).update(status=PackStatus.FAILED, error="A document could not be rendered.")
    assert pack_build_again(pack=first, user=admin).formats == ["taskwright"]


def test_build_again_waits_for_the_version_being_built(demo_pack, client):
    project = demo_pack.project
    admin = _admin(project)
    first = _built(project, admin, [demo_pack.submission.pk], formats=["taskwright"])
    building = pack_build_again(pack=first, user=admin)  # queued: the worker has not built it yet
    client.force_login(admin)
    page = client.get(reverse("pack-detail", args=[first.pk])).content.decode()
    assert 'id="build-again"' not in page and f"Version {building.version} is still being built" in page
    with pytest.raises(ApplicationError, match="is still being built"):
        pack_build_again(pack=first, user=admin)
    assert Pack.objects.filter(project=project, name="Release").count() == 2
