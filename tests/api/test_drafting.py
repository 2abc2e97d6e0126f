"""Drafting through the API: skeleton proposals, draft runs and jobs, versions and
restore, rendered files, uploads and the consistency check. Happy paths run against the
fake model server with the queued Celery work run in-process; refusals check that
nothing changed; every new route is a 404 across projects."""

import io

import docx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from authoring import services
from authoring.models import Document, DocumentVersion, DraftJob, DraftJobStatus, DraftRun, SkeletonProposal, VersionSource
from authoring.services import drafting
from core.files import SANDBOX_CSP
from llm.models import ModelEndpoint
from tests import factories
from tests.drafting.conftest import scripted_responder
from tests.fake_llm import Reply
from tests.uploads import builders

KEY = "sk-test-secret-key"  # what tests/conftest.py's `endpoint` puts in FAKE_LLM_KEY


@pytest.fixture
def deal(team):
    return services.world_create(
        project_id=team.project.pk, user=team.author, title="Acme acquires Beta",
        outline="Acme Corp buys Beta Ltd.", facts=[{"key": "Purchase price", "value": "$12,000,000"}],
    )


def add(world, user, path, **kwargs) -> Document:
    return services.document_create(world=world, user=user, path=path, brief=f"Brief for {path}", **kwargs)


def counts() -> tuple:
    return (
        Document.objects.count(), DocumentVersion.objects.count(), DraftRun.objects.count(), DraftJob.objects.count(),
        SkeletonProposal.objects.count(), list(Document.objects.order_by("pk").values_list("pk", "revision", "content", "status")),
        list(DraftJob.objects.order_by("pk").values_list("pk", "status")),
    )


# --- Skeleton --------------------------------------------------------------------------

def test_suggest_skeleton_poll_and_accept_items(team, deal, endpoint, fake_llm, api_for, eager, django_capture_on_commit_callbacks):
    items = [
        {"path": "Deal/LOI.docx", "kind": "file", "format": "docx", "brief": "The LOI", "target_size": 600, "metadata": {}},
        {"path": "Mail/Kickoff", "kind": "email", "format": "", "brief": "Kick-off", "target_size": 150,
         "metadata": {"subject": "Kick-off"}},
        {"path": "../escape.md", "kind": "file", "format": "md", "brief": "bad", "target_size": 10, "metadata": {}},
    ]
    fake_llm.script(Reply(structured={"items": items}))
    client = api_for(team.author)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/worlds/{deal.pk}/suggest-skeleton/", {"endpoint": endpoint.pk}, format="json")
    assert response.status_code == 202, response.json()
    body = response.json()
    assert (body["status"], body["world"], body["endpoint_name"], body["endpoint_is_scripted"]) == ("queued", deal.pk, "fake", False)
    assert "Acme Corp buys Beta Ltd." in fake_llm.requests[0].body["messages"][1]["content"]

    proposal = client.get(f"/api/skeleton-proposals/{body['id']}/").json()
    assert proposal["status"] == "ready"
    assert [(i["path"], i["accepted"]) for i in proposal["items"]] == [
        ("Deal/LOI.docx", False),
        ("Mail/Kickoff", False),
        ("../escape.md", False),
    ]
    assert "not a valid data-room path" in proposal["items"][2]["problem"]

    accepted = client.post(f"/api/skeleton-proposals/{body['id']}/accept/", {"index": 0}, format="json")
    assert accepted.status_code == 200, accepted.json()
    assert [d["path"] for d in accepted.json()["documents"]] == ["Deal/LOI.docx"]
    assert accepted.json()["proposal"]["items"][0]["accepted"] is True
    assert list(deal.documents.values_list("path", "status")) == [("Deal/LOI.docx", "skeleton")]

    bad = client.post(f"/api/skeleton-proposals/{body['id']}/accept/", {"index": 2}, format="json")
    assert bad.status_code == 400 and "not a valid data-room path" in bad.json()["detail"]
    for index in (99, -1, "first", True, None):
        assert client.post(f"/api/skeleton-proposals/{body['id']}/accept/", {"index": index}, format="json").status_code == 400, index
    assert deal.documents.count() == 1

    everything = client.post(f"/api/skeleton-proposals/{body['id']}/accept/", {"index": "all"}, format="json")
    assert [d["path"] for d in everything.json()["documents"]] == ["Mail/Kickoff"]
    kickoff = deal.documents.get(path="Mail/Kickoff")
    assert (kickoff.kind, kickoff.metadata["subject"]) == ("email", "Kick-off")


def test_suggest_skeleton_needs_an_outline_and_an_enabled_endpoint(team, endpoint, api_for):
    empty = services.world_create(project_id=team.project.pk, user=team.author, title="Empty", outline="", facts=[])
    client = api_for(team.author)
    response = client.post(f"/api/worlds/{empty.pk}/suggest-skeleton/", {"endpoint": endpoint.pk}, format="json")
    assert response.status_code == 400 and "outline" in response.json()["detail"]
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(enabled=False)
    world = factories.world(team.project, team.author)
    for missing in (endpoint.pk, 999_999):
        response = client.post(f"/api/worlds/{world.pk}/suggest-skeleton/", {"endpoint": missing}, format="json")
        assert response.status_code == 400 and "no enabled model endpoint" in response.json()["detail"]
    assert client.post(f"/api/worlds/{world.pk}/suggest-skeleton/", {}, format="json").json() == {"endpoint": ["This field is required."]}
    assert not SkeletonProposal.objects.exists()


# --- Draft runs ------------------------------------------------------------------------

def test_draft_all_then_poll_the_run_and_download_real_files(
    team, deal, endpoint, fake_llm, api_for, eager, django_capture_on_commit_callbacks
):
    loi = add(deal, team.author, "Deal/LOI.docx")
    add(deal, team.author, "Finance/Cap table.xlsx")
    fake_llm.responder = scripted_responder()
    client = api_for(team.author)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/api/worlds/{deal.pk}/draft/", {"endpoint": endpoint.pk}, format="json")
    assert response.status_code == 202, response.json()
    started = response.json()
    assert started["progress"]["total"] == 2 and started["progress"]["remaining"] == 2 and not started["progress"]["is_finished"]
    assert {j["document_path"]: j["status"] for j in started["jobs"]} == {"Deal/LOI.docx": "queued", "Finance/Cap table.xlsx": "queued"}

    run = client.get(f"/api/draft-runs/{started['id']}/")
    assert run.status_code == 200
    progress = run.json()["progress"]
    assert (progress["done"], progress["failed"], progress["remaining"], progress["is_finished"]) == (2, 0, 0, True)
    assert (progress["input_tokens"], progress["output_tokens"], progress["cost"]) == (2400, 800, "0.004000")
    job = run.json()["jobs"][0]
    assert (job["status"], job["error"], job["input_tokens"], job["output_tokens"], job["cost"], job["attempts"]) == (
        "done",
        "",
        1200,
        400,
        "0.002000",
        1,
    )

    loi.refresh_from_db()
    assert loi.status == "drafted" and "purchase price of $12,000,000" in loi.content
    download = client.get(f"/api/documents/{loi.pk}/file/")
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment;") and "LOI.docx" in download["Content-Disposition"]
    assert (download["X-Content-Type-Options"], download["Content-Security-Policy"]) == ("nosniff", SANDBOX_CSP)
    word = docx.Document(io.BytesIO(download.content))
    assert "Letter of intent" in [p.text for p in word.paragraphs]

    versions = client.get(f"/api/documents/{loi.pk}/versions/").json()
    assert versions["count"] == 1 and versions["results"][0]["source"] == "drafted" and "Drafted by fake" in versions["results"][0]["note"]
    assert "content" not in versions["results"][0]

    again = client.post(f"/api/worlds/{deal.pk}/draft/", {"endpoint": endpoint.pk}, format="json")
    assert again.status_code == 400 and "Every document already has content" in again.json()["detail"]
    assert DraftRun.objects.count() == 1


def test_redraft_one_document_with_an_instruction_then_restore_an_earlier_version(
    team, deal, endpoint, fake_llm, api_for, eager, django_capture_on_commit_callbacks
):
    loi = add(deal, team.author, "Deal/LOI.docx", content="Hand-written first draft.")
    other = add(deal, team.author, "Finance/Cap table.xlsx")
    fake_llm.responder = scripted_responder()
    client = api_for(team.author)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/worlds/{deal.pk}/draft/",
            {"endpoint": endpoint.pk, "documents": [loi.pk], "instruction": "Make it formal."},
            format="json",
        )
    assert response.status_code == 202, response.json()
    assert [j["document"] for j in response.json()["jobs"]] == [loi.pk]
    assert "Make it formal." in str(fake_llm.requests[-1].body["messages"])
    other.refresh_from_db()
    assert other.status == "skeleton"  # only the named document was drafted

    versions = client.get(f"/api/documents/{loi.pk}/versions/").json()["results"]
    assert [(v["number"], v["source"]) for v in versions] == [(2, "drafted"), (1, "edited")]
    assert "Make it formal." in versions[0]["note"]
    first = client.get(f"/api/document-versions/{versions[1]['id']}/").json()
    assert first["content"] == "Hand-written first draft."

    loi.refresh_from_db()
    stale = client.post(f"/api/document-versions/{first['id']}/restore/", {"revision": loi.revision - 1}, format="json")
    assert stale.status_code == 409 and stale.json()["current_revision"] == loi.revision
    assert client.post(f"/api/document-versions/{first['id']}/restore/", {}, format="json").json() == {
        "revision": ["This field is required."]
    }
    restored = client.post(f"/api/document-versions/{first['id']}/restore/", {"revision": loi.revision}, format="json")
    assert restored.status_code == 200, restored.json()
    assert restored.json()["content"] == "Hand-written first draft." and restored.json()["revision"] == loi.revision + 1
    loi.refresh_from_db()
    assert loi.content == "Hand-written first draft."
    assert [(v.number, v.source) for v in loi.versions.all()] == [(3, VersionSource.RESTORED), (2, "drafted"), (1, "edited")]


def test_a_failed_job_shows_why_is_retried_alone_and_a_run_can_be_cancelled(
    team, deal, endpoint, fake_llm, api_for, eager, django_capture_on_commit_callbacks
):
    loi = add(deal, team.author, "Deal/LOI.docx")
    fake_llm.responder = lambda request: Reply(status=500, content="upstream exploded")
    client = api_for(team.author)
    with django_capture_on_commit_callbacks(execute=True):
        run = client.post(f"/api/worlds/{deal.pk}/draft/", {"endpoint": endpoint.pk}, format="json").json()
    failed = client.get(f"/api/draft-runs/{run['id']}/").json()
    job = failed["jobs"][0]
    assert job["status"] == "failed" and "upstream exploded" in job["error"] and failed["progress"]["failed"] == 1

    fake_llm.responder = scripted_responder()
    with django_capture_on_commit_callbacks(execute=True):
        retried = client.post(f"/api/draft-jobs/{job['id']}/retry/")
    assert retried.status_code == 202 and retried.json()["status"] == "queued"
    assert client.get(f"/api/draft-runs/{run['id']}/").json()["jobs"][0]["status"] == "done"
    again = client.post(f"/api/draft-jobs/{job['id']}/retry/")
    assert again.status_code == 400 and "Only a failed or cancelled draft" in again.json()["detail"]

    cap = add(deal, team.author, "Finance/Cap table.xlsx")
    with django_capture_on_commit_callbacks(execute=False):  # queued, never run
        queued = client.post(f"/api/worlds/{deal.pk}/draft/", {"endpoint": endpoint.pk, "documents": [cap.pk]}, format="json").json()
    cancelled = client.post(f"/api/draft-runs/{queued['id']}/cancel/")
    assert cancelled.status_code == 200
    assert cancelled.json()["cancelled_at"] and cancelled.json()["progress"]["is_finished"]
    assert [j["status"] for j in cancelled.json()["jobs"]] == ["cancelled"]
    assert DraftJob.objects.get(run_id=queued["id"]).status == DraftJobStatus.CANCELLED
    loi.refresh_from_db()
    assert loi.status == "drafted"


def test_draft_requests_are_checked_before_anything_is_queued(team, other_team, deal, endpoint, api_for):
    loi = add(deal, team.author, "Deal/LOI.docx")
    elsewhere = factories.world(team.project, team.author, title="Another world").documents.first()
    theirs = factories.world(other_team.project, other_team.author).documents.first()
    locked = add(deal, team.author, "Deal/Notes.md", content="Mine.")
    services.document_update(document=locked, user=team.author, base_revision=locked.revision, locked=True)
    client = api_for(team.author)
    before = counts()
    for body, message in [
        ({"endpoint": endpoint.pk, "documents": [elsewhere.pk]}, "not all in this world"),
        ({"endpoint": endpoint.pk, "documents": [loi.pk, theirs.pk]}, "not all in this world"),
        ({"endpoint": endpoint.pk, "documents": [locked.pk]}, "is locked"),
        ({"endpoint": endpoint.pk, "instruction": "x" * 5_001}, "too long"),
        ({"endpoint": 999_999}, "no enabled model endpoint"),
    ]:
        response = client.post(f"/api/worlds/{deal.pk}/draft/", body, format="json")
        assert response.status_code == 400 and message in response.json()["detail"], (body, response.json())
    assert client.post(f"/api/worlds/{deal.pk}/draft/", {"endpoint": endpoint.pk, "documents": []}, format="json").status_code == 400
    assert client.post(f"/api/worlds/{deal.pk}/draft/", {"endpoint": endpoint.pk, "documents": ["x"]}, format="json").status_code == 400
    assert client.get(f"/api/worlds/{deal.pk}/consistency/?status=all").status_code == 400  # allow-listed parameters
    assert client.get(f"/api/documents/{loi.pk}/versions/?ordering=-number").status_code == 400
    assert counts() == before


# --- Files, uploads, consistency --------------------------------------------------------

def test_a_document_that_cannot_render_is_a_400_with_the_reason(team, deal, api_for):
    sheet = add(deal, team.author, "Finance/Model.xlsx", content="## Sheet: S\n\n|  | A |\n|---|---|\n| 1 | =NOPE(1) |")
    response = api_for(team.reviewer).get(f"/api/documents/{sheet.pk}/file/", HTTP_ACCEPT="application/octet-stream")
    assert response.status_code == 400
    assert "NOPE()" in response.json()["detail"] and "not an Excel function" in response.json()["detail"]


def test_upload_files_then_download_the_original(team, deal, api_for):
    client = api_for(team.author)
    data = builders.docx_bytes()
    response = client.post(
        f"/api/worlds/{deal.pk}/uploads/",
        {"files": [SimpleUploadedFile("SPA.docx", data), SimpleUploadedFile("notes.md", b"# Notes\n\nPrice $12m.")]},
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    assert [(d["path"], d["format"], d["status"]) for d in response.json()["documents"]] == [
        ("Uploads/SPA.docx", "docx", "edited"),
        ("Uploads/notes.md", "md", "edited"),
    ]
    spa = deal.documents.get(path="Uploads/SPA.docx")
    assert spa.content.startswith("# Share purchase agreement") and spa.versions.get().source == VersionSource.UPLOADED
    original = client.get(f"/api/documents/{spa.pk}/original/")
    assert original.status_code == 200 and original.content == data
    assert original["Content-Disposition"].startswith("attachment;") and original["X-Content-Type-Options"] == "nosniff"
    notes = deal.documents.get(path="Uploads/notes.md")
    assert client.get(f"/api/documents/{notes.pk}/original/").status_code == 200
    drafted_here = add(deal, team.author, "Deal/Typed.md")
    assert "not uploaded" in client.get(f"/api/documents/{drafted_here.pk}/original/").json()["detail"]


def test_an_upload_with_a_refused_file_adds_nothing_and_says_why_per_file(team, deal, api_for, settings):
    client = api_for(team.author)
    before = counts()
    response = client.post(
        f"/api/worlds/{deal.pk}/uploads/",
        {"files": [SimpleUploadedFile("SPA.docx", builders.docx_bytes()), SimpleUploadedFile("setup.exe", builders.exe_bytes())]},
        format="multipart",
    )
    assert response.status_code == 400
    body = response.json()
    assert "1 of 2 files were refused" in body["detail"]
    assert [(f["index"], f["name"]) for f in body["files"]] == [(1, "setup.exe")] and body["files"][0]["detail"]
    assert counts() == before
    media = settings.MEDIA_ROOT
    stored = [p for p in media.rglob("*") if p.is_file()] if media.exists() else []
    assert stored == []  # the accepted file's original is not left behind in storage either

    assert client.post(f"/api/worlds/{deal.pk}/uploads/", {}, format="multipart").json()["detail"].startswith("Send one or more files")
    assert client.post(f"/api/worlds/{deal.pk}/uploads/", {"files": "x"}, format="json").status_code == 415
    assert counts() == before


def test_consistency_check_lists_the_planted_contradiction(team, deal, api_for):
    add(deal, team.author, "Deal/LOI.md", content="The purchase price of $12,000,000 is agreed.")
    planted = add(deal, team.author, "Deal/Board minutes.md", content="The board noted the purchase price of $15 million.")
    response = api_for(team.reviewer).get(f"/api/worlds/{deal.pk}/consistency/")
    assert response.status_code == 200
    assert response.json()["world"] == deal.pk
    [mismatch] = response.json()["mismatches"]
    assert (mismatch["fact_key"], mismatch["document"], mismatch["document_path"]) == (
        "Purchase price",
        planted.pk,
        "Deal/Board minutes.md",
    )
    assert "$15 million" in mismatch["found"] + mismatch["snippet"]


# --- Roles -----------------------------------------------------------------------------

def test_reviewers_read_drafting_but_cannot_draft_upload_accept_cancel_retry_or_restore(
    team, deal, endpoint, fake_llm, api_for, django_capture_on_commit_callbacks
):
    loi = add(deal, team.author, "Deal/LOI.docx", content="First.")
    with django_capture_on_commit_callbacks(execute=False):
        run = drafting.draft_run_start(world=deal, user=team.author, endpoint=endpoint, documents=[loi])
        proposal = drafting.skeleton_suggest(world=deal, user=team.author, endpoint=endpoint)
    SkeletonProposal.objects.filter(pk=proposal.pk).update(status="ready", items=[
        {"path": "Deal/New.md", "kind": "file", "format": "md", "brief": "", "metadata": {}, "target_size": 10,
         "accepted": False, "problem": ""},
    ])
    failed = run.jobs.get()
    DraftJob.objects.filter(pk=failed.pk).update(status=DraftJobStatus.FAILED, error="boom")
    version = loi.versions.get()
    reviewer = api_for(team.reviewer)
    for url in [f"/api/draft-runs/{run.pk}/", f"/api/skeleton-proposals/{proposal.pk}/", f"/api/documents/{loi.pk}/versions/",
                f"/api/document-versions/{version.pk}/", f"/api/documents/{loi.pk}/file/", f"/api/worlds/{deal.pk}/consistency/"]:
        assert reviewer.get(url).status_code == 200, url
    before = counts()
    for url, body in [
        (f"/api/worlds/{deal.pk}/draft/", {"endpoint": endpoint.pk, "documents": [loi.pk]}),
        (f"/api/worlds/{deal.pk}/suggest-skeleton/", {"endpoint": endpoint.pk}),
        (f"/api/skeleton-proposals/{proposal.pk}/accept/", {"index": "all"}),
        (f"/api/draft-runs/{run.pk}/cancel/", None),
        (f"/api/draft-jobs/{failed.pk}/retry/", None),
        (f"/api/document-versions/{version.pk}/restore/", {"revision": loi.revision}),
    ]:
        response = reviewer.post(url, body, format="json")
        assert response.status_code == 403 and "cannot edit content" in response.json()["detail"], (url, response.json())
    upload = reviewer.post(f"/api/worlds/{deal.pk}/uploads/", {"files": [SimpleUploadedFile("a.md", b"# A")]}, format="multipart")
    assert upload.status_code == 403 and "cannot edit content" in upload.json()["detail"]
    assert counts() == before
    assert not fake_llm.requests


# --- Isolation -------------------------------------------------------------------------

@pytest.fixture
def theirs(other_team, endpoint, django_capture_on_commit_callbacks):
    """One of each drafting object in the other project (nothing run)."""
    world = factories.world(other_team.project, other_team.author, title="Their world")
    document = add(world, other_team.author, "Deal/Theirs.md", content="Their text.")
    with django_capture_on_commit_callbacks(execute=False):
        run = drafting.draft_run_start(world=world, user=other_team.author, endpoint=endpoint)
        proposal = drafting.skeleton_suggest(world=world, user=other_team.author, endpoint=endpoint)
    DraftJob.objects.filter(run=run).update(status=DraftJobStatus.FAILED)
    return {
        "world": world,
        "document": document,
        "version": document.versions.get(),
        "run": run,
        "job": run.jobs.first(),
        "proposal": proposal,
    }


def test_every_new_route_is_a_404_across_projects(team, theirs, endpoint, api_for):
    t = theirs
    requests = [
        ("post", "/api/worlds/{}/suggest-skeleton/", t["world"].pk, {"endpoint": endpoint.pk}),
        ("get", "/api/skeleton-proposals/{}/", t["proposal"].pk, None),
        ("post", "/api/skeleton-proposals/{}/accept/", t["proposal"].pk, {"index": "all"}),
        ("post", "/api/worlds/{}/draft/", t["world"].pk, {"endpoint": endpoint.pk}),
        ("get", "/api/draft-runs/{}/", t["run"].pk, None),
        ("post", "/api/draft-runs/{}/cancel/", t["run"].pk, None),
        ("post", "/api/draft-jobs/{}/retry/", t["job"].pk, None),
        ("get", "/api/documents/{}/versions/", t["document"].pk, None),
        ("get", "/api/document-versions/{}/", t["version"].pk, None),
        ("post", "/api/document-versions/{}/restore/", t["version"].pk, {"revision": 1}),
        ("get", "/api/documents/{}/file/", t["document"].pk, None),
        ("get", "/api/documents/{}/original/", t["document"].pk, None),
        ("get", "/api/worlds/{}/consistency/", t["world"].pk, None),
        ("post", "/api/worlds/{}/uploads/", t["world"].pk, "upload"),
    ]
    before = counts()
    for role in ("author", "reviewer", "admin"):
        client = api_for(getattr(team, role))
        for method, template, their_id, body in requests:
            answers = []
            for pk in (their_id, 999_999_999):
                if body == "upload":
                    response = client.post(template.format(pk), {"files": [SimpleUploadedFile("a.md", b"# A")]}, format="multipart")
                else:
                    response = getattr(client, method)(template.format(pk), body, format="json")
                answers.append((response.status_code, response.json()))
            # Exactly the answer for an id that does not exist: nothing tells them apart.
            assert answers[0][0] == 404 and answers[0] == answers[1], (role, template, answers)
    assert counts() == before
    # Naming their documents in a draft of our world finds nothing either.
    ours = factories.world(team.project, team.author)
    response = api_for(team.author).post(
        f"/api/worlds/{ours.pk}/draft/", {"endpoint": endpoint.pk, "documents": [t["document"].pk]}, format="json"
    )
    assert response.status_code == 400 and DraftRun.objects.filter(world=ours).count() == 0


def test_the_key_never_appears_in_drafting_answers(team, deal, endpoint, fake_llm, api_for, eager, django_capture_on_commit_callbacks):
    # A provider (or proxy) that echoes the Authorization header back in its error.
    fake_llm.responder = lambda request: Reply(status=401, content=f"Incorrect API key provided: {request.headers.get('authorization')}")
    add(deal, team.author, "Deal/LOI.docx")
    client = api_for(team.author)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(f"/api/worlds/{deal.pk}/draft/", {"endpoint": endpoint.pk}, format="json")
    assert fake_llm.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent, to the endpoint only
    run = client.get(f"/api/draft-runs/{started.json()['id']}/")
    job = run.json()["jobs"][0]
    assert job["status"] == "failed" and "refused the API key from FAKE_LLM_KEY" in job["error"]
    for response in (started, run):
        assert KEY not in response.content.decode()
    assert not DraftJob.objects.filter(error__contains=KEY).exists()
