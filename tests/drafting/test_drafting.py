import io

import docx
import openpyxl
import pytest
from django.urls import reverse

from authoring import services
from authoring.models import DocumentStatus, DraftJob, DraftJobStatus, SkeletonProposal, VersionSource
from authoring.rendering import render_file
from authoring.services import drafting
from core.exceptions import ApplicationError
from llm.models import ModelCall, ModelEndpoint
from tests.drafting.conftest import scripted_responder
from tests.fake_llm import Reply

HX = {"HTTP_HX_REQUEST": "true"}


def add(world, user, path, **kw):
    return services.document_create(world=world, user=user, path=path, brief=f"Brief for {path}", **kw)


def run_jobs(callbacks):
    """Run what the request queued after commit (the Celery tasks, in-process)."""
    for callback in callbacks:
        callback()


def test_draft_all_drafts_every_skeleton_document_into_real_files(
    team, drafting_world, endpoint, fake_llm, eager, django_capture_on_commit_callbacks
):
    loi = add(drafting_world, team.author, "Deal/LOI.docx")
    cap = add(drafting_world, team.author, "Finance/Cap table.xlsx")
    locked = add(drafting_world, team.author, "Deal/Notes.md", content="Hand-written.")
    services.document_update(document=locked, user=team.author, base_revision=locked.revision, locked=True)
    fake_llm.responder = scripted_responder()
    with django_capture_on_commit_callbacks(execute=True):
        run = drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint)
    progress = drafting.draft_run_progress(run=run)
    assert (progress["total"], progress["done"], progress["failed"], progress["input_tokens"]) == (2, 2, 0, 2400)
    loi.refresh_from_db()
    cap.refresh_from_db()
    locked.refresh_from_db()
    assert loi.status == DocumentStatus.DRAFTED and "purchase price of $12,000,000" in loi.content
    assert locked.content == "Hand-written." and locked.status == DocumentStatus.LOCKED

    word = docx.Document(io.BytesIO(render_file(loi.kind, loi.format, loi.content, loi.metadata, path=loi.path).data))
    assert "Letter of intent" in [p.text for p in word.paragraphs]
    assert word.tables[0].cell(1, 1).text == "$12,000,000"
    book = openpyxl.load_workbook(
        io.BytesIO(render_file(cap.kind, cap.format, cap.content, cap.metadata, path=cap.path).data), data_only=True
    )
    assert book["Cap table"]["B4"].value == 10_000_000  # the formula's cached value

    versions = loi.versions.all()
    assert [(v.number, v.source) for v in versions] == [(1, VersionSource.DRAFTED)] and "Drafted by fake" in versions[0].note
    assert ModelCall.objects.filter(purpose="drafting", outcome="ok").count() == 2


def test_each_document_is_drafted_with_its_thread_and_the_facts(
    team, drafting_world, endpoint, fake_llm, eager, django_capture_on_commit_callbacks
):
    first = add(drafting_world, team.author, "Mail/Kickoff", kind="email", metadata={"date": "2026-01-05T09:00:00+00:00"})
    fake_llm.responder = scripted_responder()
    with django_capture_on_commit_callbacks(execute=True):
        drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint)
    reply = add(
        drafting_world,
        team.author,
        "Mail/Re Kickoff",
        kind="email",
        metadata={"thread": "Mail/Kickoff", "date": "2026-01-05T11:00:00+00:00"},
    )
    with django_capture_on_commit_callbacks(execute=True):
        drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint, documents=[reply])
    prompt = fake_llm.requests[-1].body["messages"][1]["content"]
    assert "Purchase price: $12,000,000" in prompt  # the facts sheet
    assert "### Mail/Kickoff" in prompt and "The purchase price we discussed" in prompt  # the earlier email of its thread
    first.refresh_from_db()
    reply.refresh_from_db()
    assert first.metadata["subject"] == "Project Beta kick-off" and first.metadata["from"].startswith("Dana Ruiz")
    assert reply.metadata["thread"] == "Mail/Kickoff"  # what the expert set is kept
    assert fake_llm.requests[-1].body["response_format"]["json_schema"]["schema"]["properties"]["body"]["type"] == "string"


def test_a_job_that_runs_twice_changes_nothing_the_second_time(
    team, drafting_world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    loi = add(drafting_world, team.author, "Deal/LOI.docx")
    fake_llm.responder = scripted_responder()
    with django_capture_on_commit_callbacks(execute=False):
        run = drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint)
    job = run.jobs.get()
    drafting.draft_job_execute(job_id=job.pk)
    drafting.draft_job_execute(job_id=job.pk)
    assert len(fake_llm.requests) == 1 and loi.versions.count() == 1
    job.refresh_from_db()
    assert job.status == DraftJobStatus.DONE and job.attempts == 1


def test_a_failed_document_shows_why_and_can_be_retried_alone(
    client, team, drafting_world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    loi = add(drafting_world, team.author, "Deal/LOI.docx")
    fake_llm.responder = lambda request: Reply(status=500, content="upstream exploded")
    with django_capture_on_commit_callbacks(execute=False):
        run = drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint)
    job = run.jobs.get()
    drafting.draft_job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == DraftJobStatus.FAILED and "upstream exploded" in job.error and "Gave up after 4 attempts" in job.error
    client.force_login(team.author)
    panel = client.get(reverse("draft-run-progress", args=[run.pk]), **HX).content.decode()
    assert "upstream exploded" in panel and "Retry" in panel and "every 2s" not in panel

    fake_llm.responder = scripted_responder()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        client.post(reverse("draft-job-retry", args=[job.pk]), **HX)
    assert len(callbacks) == 1
    drafting.draft_job_execute(job_id=job.pk)
    loi.refresh_from_db()
    assert loi.status == DocumentStatus.DRAFTED


def test_cancel_stops_queued_jobs_and_drops_late_results(team, drafting_world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    add(drafting_world, team.author, "Deal/LOI.docx")
    cap = add(drafting_world, team.author, "Finance/Cap table.xlsx")
    fake_llm.responder = scripted_responder()
    with django_capture_on_commit_callbacks(execute=False):
        run = drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint)
    first, second = run.jobs.order_by("id")
    DraftJob.objects.filter(pk=first.pk).update(status=DraftJobStatus.RUNNING)  # a worker has it
    assert drafting.draft_run_cancel(run=run, user=team.author) == 2
    drafting.draft_job_execute(job_id=second.pk)
    assert fake_llm.requests == []  # a cancelled job never starts
    assert drafting.draft_run_progress(run=run)["is_finished"]
    cap.refresh_from_db()
    assert cap.status == DocumentStatus.SKELETON


def test_redraft_with_an_instruction_keeps_the_old_version_restorable(
    client, team, drafting_world, endpoint, fake_llm, eager, django_capture_on_commit_callbacks
):
    loi = add(drafting_world, team.author, "Deal/LOI.docx", content="# Old draft\n\nThe CFO is calm.")
    fake_llm.responder = scripted_responder()
    client.force_login(team.author)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("document-draft", args=[loi.pk]), {"endpoint": endpoint.pk, "instruction": "make the CFO sound more defensive"}, **HX
        )
    assert response.status_code == 200, response.content.decode()
    assert "make the CFO sound more defensive" in fake_llm.requests[-1].body["messages"][-1]["content"]
    assert "The CFO is calm." in fake_llm.requests[-1].body["messages"][-1]["content"]
    loi.refresh_from_db()
    assert "Letter of intent" in loi.content
    old, new = loi.versions.order_by("number")
    assert old.content.startswith("# Old draft") and "defensive" in new.note
    page = client.get(reverse("document-versions", args=[loi.pk]) + f"?v={old.number}").content.decode()
    assert "Restore this version" in page
    client.post(reverse("document-version-restore", args=[old.pk]), {"revision": loi.revision})
    loi.refresh_from_db()
    assert loi.content.startswith("# Old draft") and loi.versions.count() == 3


def test_locked_documents_cannot_be_drafted(team, drafting_world, endpoint):
    doc = add(drafting_world, team.author, "Deal/LOI.docx", content="x")
    services.document_update(document=doc, user=team.author, base_revision=doc.revision, locked=True)
    with pytest.raises(ApplicationError, match="locked"):
        drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint, documents=[doc])


def test_reviewers_cannot_draft(team, drafting_world, endpoint):
    add(drafting_world, team.author, "Deal/LOI.docx")
    with pytest.raises(ApplicationError, match="cannot edit content"):
        drafting.draft_run_start(world=drafting_world, user=team.reviewer, endpoint=endpoint)


def test_suggest_skeleton_then_accept_item_by_item_and_all(
    client, team, drafting_world, endpoint, fake_llm, eager, django_capture_on_commit_callbacks
):
    items = [
        {"path": "Deal/LOI.docx", "kind": "file", "format": "docx", "brief": "The LOI", "target_size": 600, "metadata": {}},
        {"path": "Mail/Kickoff", "kind": "email", "format": "", "brief": "Kick-off", "target_size": 150,
         "metadata": {"from": "dana@acme.test", "subject": "Kick-off"}},
        {"path": "../escape.md", "kind": "file", "format": "md", "brief": "bad", "target_size": 10, "metadata": {}},
    ]
    fake_llm.script(Reply(structured={"items": items}))
    client.force_login(team.author)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("world-suggest-skeleton", args=[drafting_world.pk]), {"endpoint": endpoint.pk}, **HX)
    assert response.status_code == 200
    proposal = SkeletonProposal.objects.get()
    panel = client.get(reverse("skeleton-proposal", args=[proposal.pk]), **HX).content.decode()
    assert "Deal/LOI.docx" in panel and "not a valid data-room path" in panel and "Accept all" in panel
    assert "Acme Corp buys Beta Ltd." in fake_llm.requests[0].body["messages"][1]["content"]

    accepted = client.post(reverse("skeleton-accept", args=[proposal.pk]), {"index": "0"}, **HX)
    assert accepted["HX-Trigger"] == "data-room-changed"
    assert list(drafting_world.documents.values_list("path", flat=True)) == ["Deal/LOI.docx"]
    client.post(reverse("skeleton-accept", args=[proposal.pk]), {"index": "all"}, **HX)
    assert sorted(drafting_world.documents.values_list("path", flat=True)) == ["Deal/LOI.docx", "Mail/Kickoff"]
    kickoff = drafting_world.documents.get(path="Mail/Kickoff")
    assert kickoff.kind == "email" and kickoff.metadata["subject"] == "Kick-off"


def test_a_proposal_that_hits_a_bug_ends_failed_and_the_panel_says_so(
    client, team, drafting_world, endpoint, fake_llm, eager, django_capture_on_commit_callbacks, monkeypatch
):
    from authoring import drafting_prompts

    def broken(world, existing):
        raise KeyError("outline")

    monkeypatch.setattr(drafting_prompts, "skeleton_messages", broken)
    with django_capture_on_commit_callbacks(execute=True):
        proposal = drafting.skeleton_suggest(world=drafting_world, user=team.author, endpoint=endpoint)
    proposal.refresh_from_db()
    assert proposal.status == "failed" and proposal.error == "Internal error (KeyError); the team has the log."
    client.force_login(team.author)
    panel = client.get(reverse("skeleton-proposal", args=[proposal.pk]), **HX).content.decode()
    assert "The proposal failed: Internal error (KeyError)" in panel and "every 2s" not in panel  # it stops polling


def test_proposals_whose_message_was_lost_are_sent_again_once(
    team, drafting_world, endpoint, fake_llm, eager, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    fake_llm.script(
        Reply(
            structured={
                "items": [
                    {"path": "Deal/LOI.docx", "kind": "file", "format": "docx", "brief": "The LOI", "target_size": 600, "metadata": {}}
                ]
            }
        )
    )
    with django_capture_on_commit_callbacks(execute=False):  # the message is lost
        lost = drafting.skeleton_suggest(world=drafting_world, user=team.author, endpoint=endpoint)
        fresh = drafting.skeleton_suggest(world=drafting_world, user=team.author, endpoint=endpoint)
    SkeletonProposal.objects.filter(pk=lost.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert drafting.skeleton_proposals_recover() == 1  # sent again and, eagerly, run
    assert {p.pk: p.status for p in SkeletonProposal.objects.all()} == {lost.pk: "ready", fresh.pk: "queued"}
    drafting.skeleton_proposal_execute(proposal_id=lost.pk)  # a second delivery asks nothing
    assert len(fake_llm.requests) == 1
    assert [item["path"] for item in SkeletonProposal.objects.get(pk=lost.pk).items] == ["Deal/LOI.docx"]


def test_pages_explain_what_to_do_without_an_endpoint(client, team, drafting_world):
    assert not ModelEndpoint.objects.exists()
    client.force_login(team.author)
    page = client.get(reverse("world-editor", args=[drafting_world.pk])).content.decode()
    assert "No model is configured yet." in page and reverse("model-endpoints") in page
    doc = add(drafting_world, team.author, "Deal/LOI.docx")
    assert "No model is configured" in client.get(reverse("document-editor", args=[doc.pk])).content.decode()
    refused = client.post(reverse("world-draft-all", args=[drafting_world.pk]), {"endpoint": ""}, **HX)
    assert refused.status_code == 422 and "Choose a model endpoint" in refused.content.decode()


def test_scripted_endpoint_is_labelled_wherever_it_appears(client, team, drafting_world, eager, django_capture_on_commit_callbacks):
    scripted = ModelEndpoint.objects.create(name="Sample", kind="scripted")
    doc = add(drafting_world, team.author, "Notes/Memo.md")
    client.force_login(team.author)
    assert "scripted sample model" in client.get(reverse("world-editor", args=[drafting_world.pk])).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=scripted)
    doc.refresh_from_db()
    assert "[Sample text from the scripted model]" in doc.content
    assert "scripted sample model" in doc.versions.get().note
    assert "Scripted sample model" in client.get(reverse("model-endpoints")).content.decode()
    # Redrafting a document that has text warns that the sample model would replace it with a placeholder line.
    editor = client.get(reverse("document-editor", args=[doc.pk])).content.decode()
    assert 'id="redraft-sample-warning"' in editor and "replaces this document's text with that line" in editor


def test_consistency_check_finds_a_planted_contradiction(client, team, drafting_world):
    add(drafting_world, team.author, "Deal/LOI.md", content="The purchase price of $12,000,000 is agreed.")
    planted = add(drafting_world, team.author, "Deal/Board minutes.md", content="The board noted the purchase price of $15 million.")
    client.force_login(team.author)
    fragment = client.get(reverse("world-consistency", args=[drafting_world.pk]), **HX).content.decode()
    assert "Board minutes.md" in fragment and "$15 million" in fragment and reverse("document-editor", args=[planted.pk]) in fragment
    assert "LOI.md" not in fragment


def test_jobs_whose_message_was_lost_are_sent_again_once(
    team, drafting_world, endpoint, fake_llm, eager, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    from authoring.models import DraftRun

    add(drafting_world, team.author, "Deal/LOI.docx")
    stuck = add(drafting_world, team.author, "Finance/Cap table.xlsx")
    fake_llm.responder = scripted_responder()
    with django_capture_on_commit_callbacks(execute=False):
        run = drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint)
    queued, running = run.jobs.order_by("id")
    # A worker took the second job and died an hour ago; the first job's message was lost.
    hour_ago = timezone.now() - timedelta(hours=1)
    DraftJob.objects.filter(pk=running.pk).update(status=DraftJobStatus.RUNNING, attempts=1, started_at=hour_ago, heartbeat_at=hour_ago)
    DraftRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert drafting.draft_jobs_recover() == 2  # sent again (and, eagerly, run)
    for job in (queued, running):  # a second delivery of either changes nothing
        drafting.draft_job_execute(job_id=job.pk)
    assert len(fake_llm.requests) == 2
    stuck.refresh_from_db()
    assert stuck.status == DocumentStatus.DRAFTED and stuck.versions.count() == 1
