"""Cancelling drafting from the pages: Draft all's bar and Cancel, then a run that says it was
cancelled and how many finished; one document's draft cancelled from its editor."""

import re

from django.urls import reverse

from authoring import services
from authoring.models import DocumentStatus, DraftJobStatus, DraftRun
from authoring.services import drafting
from tests.drafting.conftest import scripted_responder

HX = {"HTTP_HX_REQUEST": "true"}


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def test_draft_all_shows_the_bar_and_cancel_then_cancelled_with_how_many_finished(client, team, drafting_world, endpoint, fake_llm,
                                                                                    django_capture_on_commit_callbacks):
    for path in ("Deal/LOI.docx", "Finance/Cap table.xlsx", "Deal/Notes.md"):
        services.document_create(world=drafting_world, user=team.author, path=path, brief=f"Brief for {path}")
    fake_llm.responder = scripted_responder()
    client.force_login(team.author)
    with django_capture_on_commit_callbacks(execute=False):
        client.post(reverse("world-draft-all", args=[drafting_world.pk]), {"endpoint": endpoint.pk}, **HX)
    run = DraftRun.objects.get(world=drafting_world)
    drafting.draft_job_execute(job_id=run.jobs.order_by("id").first().pk)  # the worker drafts the first document

    fragment = client.get(reverse("draft-run-progress", args=[run.pk]), **HX).content.decode()
    assert 'role="progressbar" aria-label="Drafting progress" aria-valuemin="0" aria-valuemax="100" aria-valuenow="33"' in fragment
    assert f'hx-post="{reverse("draft-run-cancel", args=[run.pk])}"' in fragment and 'hx-trigger="every 2s"' in fragment

    fragment = client.post(reverse("draft-run-cancel", args=[run.pk]), **HX).content.decode()
    assert "hx-trigger" not in fragment.split(">", 1)[0] and 'aria-valuenow="100"' in fragment  # finished: it stops polling
    assert 'id="draft-run-cancelled">Cancelled<' in fragment and "1 done · 0 failed · 0 remaining · 2 cancelled" in text(fragment)
    assert reverse("draft-run-cancel", args=[run.pk]) not in fragment
    for job in run.jobs.filter(status=DraftJobStatus.CANCELLED):
        drafting.draft_job_execute(job_id=job.pk)  # their messages arrive: nothing is drafted
    assert list(run.jobs.order_by("id").values_list("status", flat=True)) == ["done", "cancelled", "cancelled"]


def test_one_documents_draft_is_cancelled_from_its_editor(client, team, drafting_world, endpoint, fake_llm,
                                                         django_capture_on_commit_callbacks):
    loi = services.document_create(world=drafting_world, user=team.author, path="Deal/LOI.docx", brief="The letter of intent.")
    fake_llm.responder = scripted_responder()
    client.force_login(team.author)
    with django_capture_on_commit_callbacks(execute=False):
        started = client.post(reverse("document-draft", args=[loi.pk]), {"endpoint": endpoint.pk}, **HX).content.decode()
    run = DraftRun.objects.get(world=drafting_world)
    cancel_url = f'{reverse("draft-run-cancel", args=[run.pk])}?document={loi.pk}'
    assert 'id="cancel-document-draft"' in started and f'hx-post="{cancel_url}"' in started and 'hx-trigger="every 2s"' in started

    client.force_login(team.reviewer)
    assert client.post(cancel_url, **HX).status_code == 403 and run.jobs.get().status == DraftJobStatus.QUEUED
    client.force_login(team.author)
    fragment = client.post(cancel_url, **HX).content.decode()
    assert fragment.lstrip().startswith('<section id="document-drafting" class="card">')  # no more polling
    assert 'id="document-draft-cancelled"' in fragment and 'id="cancel-document-draft"' not in fragment
    assert 'id="draft-document"' in fragment  # it can be drafted again
    drafting.draft_job_execute(job_id=run.jobs.get().pk)
    assert fake_llm.requests == [] and run.jobs.get().status == DraftJobStatus.CANCELLED
    loi.refresh_from_db()
    assert loi.status == DocumentStatus.SKELETON and not loi.content
