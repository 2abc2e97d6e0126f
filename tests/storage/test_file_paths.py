"""Every file path, on the local filesystem and on an S3-compatible store (tests/s3.py): what
an upload keeps, what a pack build writes, what a world import keeps, all stored through
Django's storage and served back by the views from there, whichever process wrote them."""

import hashlib
import io
import re
import zipfile

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from authoring.models import Document
from packs.models import PackStatus
from packs.services import pack_build, pack_build_again, pack_create
from reviews.models import Decision
from reviews.services import review_decide, submission_claim_next, submission_create
from tests import factories
from tests.uploads import builders

pytestmark = [pytest.mark.file_storage]

STORED_UPLOAD = re.compile(r"^uploads/\d{4}/\d{2}/[0-9a-f]{32}\.(docx|pdf|md)$")


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def local_files(file_storage) -> list[str]:
    root = file_storage.media_root
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) if root.exists() else []


def assert_only_in_the_store(file_storage) -> None:
    """On S3 nothing lands on the local disk: another host could not read it there."""
    if file_storage.kind == "s3":
        assert local_files(file_storage) == []
        assert file_storage.stored(), "nothing was stored in the bucket"
    else:
        assert local_files(file_storage) == file_storage.stored()


def test_uploaded_originals_are_stored_and_served_back_and_a_refused_batch_leaves_none(client, team, world, file_storage):
    sent = {"SPA.docx": builders.docx_bytes(), "Summary.pdf": builders.pdf_bytes(["Transaction summary"]), "todo.md": b"# To do\n"}
    answer = api(team.author).post(f"/api/worlds/{world.pk}/uploads/",
                                   {"files": [SimpleUploadedFile(name, data) for name, data in sent.items()]}, format="multipart")
    assert answer.status_code == 201, answer.content
    documents = Document.objects.filter(pk__in=[d["id"] for d in answer.json()["documents"]])
    by_name = {d.source_name: d for d in documents}
    assert sorted(by_name) == sorted(sent)
    assert file_storage.stored() == sorted(d.source_file.name for d in documents)
    assert all(STORED_UPLOAD.match(d.source_file.name) for d in documents), [d.source_file.name for d in documents]
    assert_only_in_the_store(file_storage)

    client.force_login(team.author)
    for name, data in sent.items():
        document = by_name[name]
        page = client.get(reverse("document-source-download", args=[document.pk]))
        assert page.status_code == 200 and body(page) == data, name
        assert page["Content-Disposition"].startswith("attachment") and page["X-Content-Type-Options"] == "nosniff"
        original = api(team.author).get(f"/api/documents/{document.pk}/original/")
        assert original.status_code == 200 and body(original) == data, name

    # All or nothing: the docx of a batch with a refused file is stored, then removed again.
    before = file_storage.stored()
    refused = api(team.author).post(f"/api/worlds/{world.pk}/uploads/", {
        "files": [SimpleUploadedFile("Other.docx", builders.docx_bytes()), SimpleUploadedFile("setup.exe", builders.exe_bytes())],
    }, format="multipart")
    assert refused.status_code == 400 and refused.json()["files"][0]["name"] == "setup.exe"
    assert file_storage.stored() == before


def test_an_original_missing_from_the_store_is_a_clear_404(client, team, world, file_storage):
    answer = api(team.author).post(f"/api/worlds/{world.pk}/uploads/", {"files": [SimpleUploadedFile("a.md", b"# A\n")]},
                                   format="multipart")
    document = Document.objects.get(pk=answer.json()["documents"][0]["id"])
    default_storage.delete(document.source_file.name)
    assert file_storage.stored() == []
    missing = api(team.author).get(f"/api/documents/{document.pk}/original/")
    assert missing.status_code == 404 and missing.json() == {"detail": "This document's original file is missing from storage."}
    client.force_login(team.author)
    page = client.get(reverse("document-source-download", args=[document.pk]))
    assert page.status_code == 404


def _approved_submission(team, world):
    env_task = factories.env_task(world, team.author, criteria=2)
    submission = submission_create(env_task=env_task, user=team.author)
    claimed = submission_claim_next(user=team.reviewer)
    review_decide(submission=claimed, user=team.reviewer, decision=Decision.APPROVE, comment="Good.",
                  checklist=factories.checklist(claimed.project_id))
    submission.refresh_from_db()
    return submission


def test_a_pack_is_built_into_the_store_downloaded_from_it_and_its_worlds_are_cached_there(client, team, file_storage):
    world = factories.world(team.project, team.author, documents=3, drafted=True)
    submission = _approved_submission(team, world)
    pack = pack_create(project_id=team.project.pk, user=team.admin, name="Release", submission_ids=[submission.pk])
    pack_build(pack_id=pack.pk)  # what the worker runs (the test's transaction never commits: nothing is queued)
    pack.refresh_from_db()
    assert pack.status == PackStatus.READY, pack.error
    stored = file_storage.stored()
    cached = [name for name in stored if name.startswith("packs/world-cache/")]
    assert len({name.rpartition(".")[0] for name in cached}) == 1  # one world, rendered once (its zip and its record)
    assert sorted(set(stored) - set(cached)) == [pack.file.name] and pack.file.name.startswith(f"packs/{team.project.slug}/")
    assert_only_in_the_store(file_storage)

    client.force_login(team.admin)
    whole = client.get(reverse("pack-download", args=[pack.pk]))
    data = body(whole)
    assert whole.status_code == 200 and whole["Content-Disposition"].startswith("attachment")
    assert hashlib.sha256(data).hexdigest() == pack.sha256 and len(data) == pack.size_bytes == int(whole["Content-Length"])
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert f"world_files_zipped/world-{world.pk}.zip" in names
    from_api = api(team.admin).get(f"/api/packs/{pack.pk}/download/")
    assert from_api.status_code == 200 and hashlib.sha256(body(from_api)).hexdigest() == pack.sha256
    inspect = client.get(reverse("pack-download-format", args=[pack.pk, "inspect"]))
    assert inspect.status_code == 200 and "inspect/task.py" in zipfile.ZipFile(io.BytesIO(body(inspect))).namelist()

    # The next version of the same world is read from the cache in the store, not rendered again.
    again = pack_build_again(pack=pack, user=team.admin)
    pack_build(pack_id=again.pk)
    again.refresh_from_db()
    assert again.status == PackStatus.READY, again.error
    assert [name for name in file_storage.stored() if name.startswith("packs/world-cache/")] == cached
    assert again.file.name != pack.file.name and again.file.name in file_storage.stored()

    # A pack whose file is gone from the store is not served as an error page.
    default_storage.delete(pack.file.name)
    assert api(team.admin).get(f"/api/packs/{pack.pk}/download/").status_code == 409
    assert client.get(reverse("pack-download", args=[pack.pk])).status_code == 404
    assert client.get(reverse("pack-download-format", args=[pack.pk, "inspect"])).status_code == 404
    assert api(team.admin).get(f"/api/packs/{pack.pk}/download/inspect/").status_code == 404


def test_a_world_exported_and_imported_keeps_its_originals_in_the_store(client, team, file_storage):
    world = factories.world(team.project, team.author, documents=2, drafted=True)
    pdf = builders.pdf_bytes(["Transaction summary", "Price: EUR 51.2m"])
    uploaded = api(team.author).post(f"/api/worlds/{world.pk}/uploads/", {"files": [SimpleUploadedFile("Summary.pdf", pdf)]},
                                     format="multipart")
    assert uploaded.status_code == 201
    exported = api(team.author).get(f"/api/worlds/{world.pk}/export/")
    assert exported.status_code == 200, exported.content
    # Without world.json the files are read back as uploads are, their bytes kept as originals.
    with zipfile.ZipFile(io.BytesIO(body(exported))) as source, io.BytesIO() as out:
        with zipfile.ZipFile(out, "w") as foreign:
            for info in source.infolist():
                if not info.filename.endswith("world.json"):
                    foreign.writestr(info, source.read(info))
        foreign_zip = out.getvalue()
    before = set(file_storage.stored())
    imported = api(team.author).post("/api/worlds/import/", {"project": team.project.pk, "file": SimpleUploadedFile("w.zip", foreign_zip)},
                                     format="multipart")
    assert imported.status_code == 201, imported.content
    copies = Document.objects.filter(world_id=imported.json()["id"]).exclude(source_file="")
    assert copies.exists()
    assert set(file_storage.stored()) - before == {d.source_file.name for d in copies}
    assert_only_in_the_store(file_storage)
    client.force_login(team.author)
    summary = next(d for d in copies if d.format == "pdf")
    served = body(client.get(reverse("document-source-download", args=[summary.pk])))
    with summary.source_file.open("rb") as handle:
        assert served == handle.read() and served.startswith(b"%PDF")
