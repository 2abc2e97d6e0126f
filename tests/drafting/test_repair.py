"""A drafted document counts as done only when it builds into its real file.

The fake model server answers with drafts that do not build (an xlsx `Formats:` line the
parser rejects, a chat message dated without a UTC offset); drafting sends the renderer's
error back for a bounded number of repairs, then fails the job with a readable reason and
a Retry. The data room says Failed, and a task whose world holds a document that cannot be
built is neither submitted nor approved.
"""

import copy
import io

import openpyxl
import pytest
from django.urls import reverse

from authoring import services
from authoring.models import DocumentStatus, DraftJobStatus
from authoring.render_check import unrenderable_documents
from authoring.rendering import render_file
from authoring.services import drafting
from core.exceptions import ApplicationError
from llm.models import ModelCall
from reviews import services as review_services
from reviews.models import Submission, SubmissionStatus
from reviews.selectors.policy import checklist_items
from rollouts.models import Rollout, RolloutBatch, RolloutStatus
from tests import factories
from tests.drafting.conftest import DRAFTS
from tests.fake_llm import Reply

HX = {"HTTP_HX_REQUEST": "true"}
CAP = "Finance/Cap table.xlsx"
GOOD_XLSX = DRAFTS[CAP]
# What models really write: the range names its sheet, which a Formats line cannot hold.
BROKEN_XLSX = copy.deepcopy(GOOD_XLSX)
BROKEN_XLSX["sheets"][0]["formats"] = [{"range": "Cap table!B2:B4", "number_format": "#,##0"}]
DANA = {"name": "Dana Ruiz", "email": "dana@acme.test"}


def chat_draft(date: str) -> dict:
    return {"channel": "deal-team", "from": DANA, "date": date, "text": "Price agreed at $12,000,000."}


def add(world, user, path, **kw):
    return services.document_create(world=world, user=user, path=path, brief=f"Brief for {path}", **kw)


def draft(world, user, endpoint, capture, documents=None):
    with capture(execute=False):
        run = drafting.draft_run_start(world=world, user=user, endpoint=endpoint, documents=documents)
    for job in run.jobs.all():
        drafting.draft_job_execute(job_id=job.pk)
    return run


def last_user_message(request) -> str:
    return request.body["messages"][-1]["content"]


def test_a_draft_that_does_not_build_is_repaired_by_the_model(team, drafting_world, endpoint, fake_llm,
                                                              django_capture_on_commit_callbacks):
    cap = add(drafting_world, team.author, CAP)
    fake_llm.script(Reply(structured=BROKEN_XLSX, input_tokens=1000, output_tokens=300),
                    Reply(structured=GOOD_XLSX, input_tokens=1500, output_tokens=300))
    run = draft(drafting_world, team.author, endpoint, django_capture_on_commit_callbacks)

    job = run.jobs.get()
    assert (job.status, job.error, job.input_tokens, job.output_tokens) == (DraftJobStatus.DONE, "", 2500, 600)  # both calls
    progress = drafting.draft_run_progress(run=run)
    assert (progress["done"], progress["failed"]) == (1, 0)
    # The repair request carries the renderer's words, pointing at the line, and the draft it is about.
    assert len(fake_llm.requests) == 2
    repair = last_user_message(fake_llm.requests[1])
    assert "cannot be built into a spreadsheet (.xlsx)" in repair and "line 8: a Formats line" in repair
    assert "Cap table!B2:B4" in repair and fake_llm.requests[1].body["messages"][-2]["role"] == "assistant"

    cap.refresh_from_db()
    assert cap.status == DocumentStatus.DRAFTED and "Formats: B2:B4 #,##0" in cap.content
    book = openpyxl.load_workbook(io.BytesIO(render_file(cap.kind, cap.format, cap.content, cap.metadata, path=cap.path).data),
                                  data_only=True)
    assert book["Cap table"]["B4"].value == 10_000_000
    assert cap.versions.count() == 1
    assert ModelCall.objects.filter(purpose="drafting", outcome="ok").count() == 2


def test_a_draft_broken_every_time_fails_with_a_reason_and_retry_works(client, team, drafting_world, endpoint, fake_llm,
                                                                       django_capture_on_commit_callbacks):
    cap = add(drafting_world, team.author, CAP)
    fake_llm.responder = lambda request: Reply(structured=BROKEN_XLSX)
    run = draft(drafting_world, team.author, endpoint, django_capture_on_commit_callbacks)

    job = run.jobs.get()
    assert len(fake_llm.requests) == 1 + drafting.MAX_REPAIRS  # bounded
    assert job.status == DraftJobStatus.FAILED
    assert job.error.startswith("The model's draft could not be built into a spreadsheet (.xlsx) after 3 tries.")
    assert "line 8: a Formats line" in job.error and "Retry" in job.error
    cap.refresh_from_db()
    assert cap.status == DocumentStatus.SKELETON and cap.content == "" and cap.versions.count() == 0
    progress = drafting.draft_run_progress(run=run)
    assert (progress["done"], progress["failed"], progress["remaining"]) == (0, 1, 0)

    client.force_login(team.author)
    panel = client.get(reverse("draft-run-progress", args=[run.pk]), **HX).content.decode()
    assert "<strong>0</strong> done · <strong>1</strong> failed" in panel and "line 8: a Formats line" in panel
    # The data room says Failed (not Skeleton, not Drafted), why, and offers a Retry — in the page and its htmx refresh.
    for response in (client.get(reverse("world-editor", args=[drafting_world.pk])),
                     client.get(reverse("world-editor", args=[drafting_world.pk]) + "?fragment=data-room", **HX)):
        row = row_of(response.content.decode(), cap.pk)
        assert '<span class="badge failed">Failed</span>' in row and "Skeleton" not in row and "Drafted" not in row
        assert "line 8: a Formats line" in row and reverse("draft-job-retry", args=[job.pk]) in row and ">Retry<" in row

    fake_llm.responder = lambda request: Reply(structured=GOOD_XLSX)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        retried = client.post(reverse("draft-job-retry", args=[job.pk]), **HX)
    assert retried["HX-Trigger"] == "data-room-changed" and "every 2s" in retried.content.decode()  # the panel follows it
    assert "Drafting…" in row_of(client.get(reverse("world-editor", args=[drafting_world.pk])).content.decode(), cap.pk)
    assert len(callbacks) == 1
    drafting.draft_job_execute(job_id=job.pk)
    job.refresh_from_db()
    cap.refresh_from_db()
    assert job.status == DraftJobStatus.DONE and cap.status == DocumentStatus.DRAFTED
    assert job.input_tokens == 4 * 100  # the failed tries' tokens are kept with the retry's
    row = row_of(client.get(reverse("world-editor", args=[drafting_world.pk])).content.decode(), cap.pk)
    assert '<span class="badge drafted">Drafted</span>' in row and "Retry" not in row and "Failed" not in row


def row_of(page: str, document_pk: int) -> str:
    start = page.index(f'<tr id="document-{document_pk}"')
    return page[start:page.index("</tr>", start)]


def test_a_chat_message_dated_without_an_offset_is_repaired(team, drafting_world, endpoint, fake_llm,
                                                           django_capture_on_commit_callbacks):
    message = add(drafting_world, team.author, "Chat/deal-team/Price agreed", kind="chat", metadata={"channel": "deal-team"})
    fake_llm.script(Reply(structured=chat_draft("2026-01-05T09:30:00")), Reply(structured=chat_draft("2026-01-05T09:30:00+00:00")))
    draft(drafting_world, team.author, endpoint, django_capture_on_commit_callbacks)

    repair = last_user_message(fake_llm.requests[1])
    assert "cannot be built into a chat message" in repair and "metadata 'date': '2026-01-05T09:30:00' has no UTC offset" in repair
    message.refresh_from_db()
    assert message.status == DocumentStatus.DRAFTED and message.metadata["date"] == "2026-01-05T09:30:00+00:00"
    assert unrenderable_documents(world=drafting_world) == []


def test_a_bad_date_set_in_the_skeleton_gives_way_to_the_models_valid_one(team, drafting_world, endpoint, fake_llm,
                                                                         django_capture_on_commit_callbacks):
    """A skeleton suggested by a model may carry a date without offset; what the expert set
    otherwise wins, but a value that stops the file from building is replaced, without a repair call."""
    message = add(drafting_world, team.author, "Chat/deal-team/Kick-off", kind="chat",
                  metadata={"channel": "deal-team", "date": "2026-01-05 09:00"})
    fake_llm.script(Reply(structured={**chat_draft("2026-01-05T09:00:00+01:00"), "channel": "general"}))
    draft(drafting_world, team.author, endpoint, django_capture_on_commit_callbacks)
    assert len(fake_llm.requests) == 1
    message.refresh_from_db()
    assert message.status == DocumentStatus.DRAFTED
    assert message.metadata["date"] == "2026-01-05T09:00:00+01:00" and message.metadata["channel"] == "deal-team"


def test_an_event_without_an_end_that_stays_broken_fails_in_plain_words(team, drafting_world, endpoint, fake_llm,
                                                                        django_capture_on_commit_callbacks):
    event = add(drafting_world, team.author, "Calendar/Signing", kind="event")
    broken = {"subject": "Signing", "start": "2026-03-30T14:00:00+00:00", "end": "", "location": "", "attendees": [DANA],
              "description": "Sign."}
    fake_llm.responder = lambda request: Reply(structured=broken)
    run = draft(drafting_world, team.author, endpoint, django_capture_on_commit_callbacks)
    job = run.jobs.get()
    assert job.status == DraftJobStatus.FAILED and "calendar event (.ics) after 3 tries" in job.error and "'end'" in job.error
    event.refresh_from_db()
    assert event.status == DocumentStatus.SKELETON


def test_a_cancelled_document_gets_a_retry_in_the_data_room(client, team, drafting_world, endpoint, fake_llm,
                                                            django_capture_on_commit_callbacks):
    cap = add(drafting_world, team.author, CAP)
    with django_capture_on_commit_callbacks(execute=False):
        run = drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint)
    drafting.draft_run_cancel(run=run, user=team.author)
    client.force_login(team.author)
    row = row_of(client.get(reverse("world-editor", args=[drafting_world.pk])).content.decode(), cap.pk)
    assert "Cancelled" in row and ">Retry<" in row and "Skeleton" not in row
    # A reviewer sees the state but gets no Retry.
    client.force_login(team.reviewer)
    row = row_of(client.get(reverse("world-editor", args=[drafting_world.pk])).content.decode(), cap.pk)
    assert "Cancelled" in row and ">Retry<" not in row


def test_a_failure_older_than_a_hand_edit_is_not_shown(client, team, drafting_world, endpoint, fake_llm,
                                                       django_capture_on_commit_callbacks):
    cap = add(drafting_world, team.author, CAP)
    fake_llm.responder = lambda request: Reply(structured=BROKEN_XLSX)
    draft(drafting_world, team.author, endpoint, django_capture_on_commit_callbacks)
    cap.refresh_from_db()
    content = "## Sheet: Cap\n|   | A |\n|---|---|\n| 1 | 5 |\n"
    services.document_update(document=cap, user=team.author, base_revision=cap.revision, content=content)
    client.force_login(team.author)
    row = row_of(client.get(reverse("world-editor", args=[drafting_world.pk])).content.decode(), cap.pk)
    assert "Edited" in row and "Failed" not in row and "Retry" not in row


# --- The gates: submit and approve refuse a world with a document that cannot be built ---------

BAD_SHEET = ("## Sheet: Cap\n|   | A | B |\n|---|---|---|\n| 1 | Holder | Shares |\n| 2 | Founders | 6000 |\n| 3 | Total | =SUM(B2:B2) |\n"
             "Formats: Cap!B2:B3 #,##0\n")


def task_with_broken_document(team):
    world = factories.world(team.project, team.author, drafted=True)
    sheet = add(world, team.author, "Deal/Cap table.xlsx", content="## Sheet: Cap\n|   | A |\n|---|---|\n| 1 | 5 |\n")
    env_task = factories.env_task(world, team.author)
    return world, sheet, env_task


def test_submit_is_refused_with_the_list_of_documents_that_cannot_be_built(client, team):
    world, sheet, env_task = task_with_broken_document(team)
    chat = add(world, team.author, "Chat/deal-team/Hello", kind="chat", content="Hello",
               metadata={"channel": "deal-team", "from": "Dana <dana@acme.test>", "date": "2026-01-05T09:00:00"})
    services.document_update(document=sheet, user=team.author, base_revision=sheet.revision, content=BAD_SHEET)
    problems = unrenderable_documents(world=world)
    assert [d.path for d, _ in problems] == ["Chat/deal-team/Hello", "Deal/Cap table.xlsx"]
    assert "has no UTC offset" in problems[0][1] and "line 7: a Formats line" in problems[1][1]

    with pytest.raises(ApplicationError) as refused:
        review_services.submission_create(env_task=env_task, user=team.author)
    assert refused.value.message.startswith("Before submitting, fix these documents (they cannot be built into files): ")
    assert [d["path"] for d in refused.value.extra["documents"]] == ["Chat/deal-team/Hello", "Deal/Cap table.xlsx"]

    client.force_login(team.author)
    response = client.post(reverse("task-submit", args=[env_task.pk]), **HX)
    page = response.content.decode()
    assert response.status_code == 422 and "they cannot be built into files" in page
    assert "Deal/Cap table.xlsx — line 7: a Formats line" in page and "Chat/deal-team/Hello — metadata" in page
    assert not Submission.objects.exists()

    # Fixed by hand: the submission goes through.
    sheet.refresh_from_db()
    services.document_update(document=sheet, user=team.author, base_revision=sheet.revision,
                             content=BAD_SHEET.replace("Cap!B2", "B2"))
    chat.refresh_from_db()
    services.document_update(document=chat, user=team.author, base_revision=chat.revision,
                             metadata={**chat.metadata, "date": "2026-01-05T09:00:00+00:00"})
    assert review_services.submission_create(env_task=env_task, user=team.author).status == SubmissionStatus.QUEUED


def test_approve_is_refused_for_a_version_whose_world_cannot_be_built(client, team):
    _world, sheet, env_task = task_with_broken_document(team)
    submission = review_services.submission_create(env_task=env_task, user=team.author)
    # A version submitted before this gate existed: its frozen world holds a sheet that does not build.
    snapshot = submission.snapshot
    for document in snapshot["world"]["documents"]:
        if document["path"] == sheet.path:
            document["content"] = BAD_SHEET
    Submission.objects.filter(pk=submission.pk).update(snapshot=snapshot)
    assert review_services.submission_claim_next(user=team.reviewer).pk == submission.pk

    client.force_login(team.reviewer)
    marks = {f"check-{item.pk}": "pass" for item in checklist_items(project_id=team.project.pk)}
    response = client.post(reverse("submission-decide", args=[submission.pk]), {"decision": "approve", **marks})
    page = response.content.decode()
    assert response.status_code == 422 and "This version cannot be approved" in page
    assert "Deal/Cap table.xlsx — line 7: a Formats line" in page
    # The refusal is shown at the decision's address; visited again, that is the submission's page.
    again = client.get(reverse("submission-decide", args=[submission.pk]))
    assert (again.status_code, again["Location"]) == (302, reverse("submission-review", args=[submission.pk]))
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.CLAIMED and not submission.reviews.exists()
    # Sending it back is still possible.
    client.post(reverse("submission-decide", args=[submission.pk]),
                {"decision": "request_changes", "comment": "The cap table does not build.", **marks})
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.CHANGES_REQUESTED


def test_pack_build_stops_on_a_document_that_cannot_be_built():
    from packs.build import _world_into
    from packs.formats.records import world_key

    snapshot_world = {"id": 1, "title": "Acme", "outline": "", "facts": [], "documents": [
        {"path": "Deal/Cap table.xlsx", "kind": "file", "format": "xlsx", "brief": "", "metadata": {}, "target_size": 10,
         "content": BAD_SHEET, "status": "drafted"},
    ]}
    with pytest.raises(ApplicationError) as stopped:
        _world_into(None, snapshot_world, world_key(1, 1), "Task 1 v1", None)
    assert stopped.value.message.startswith("The pack was not built: Task 1 v1 is on the world 'Acme'")
    assert "Deal/Cap table.xlsx" in stopped.value.message and "Formats line" in stopped.value.message


# --- A cancelled batch says how many rollouts finished before and after the cancel ----------

def test_a_cancelled_batch_says_what_finished_before_and_after(client, team, env_task):
    from datetime import timedelta

    from django.utils import timezone

    from rollouts.selectors import batch_progress

    now = timezone.now()
    batch = RolloutBatch.objects.create(
        project_id=team.project.pk, env_task=env_task, task_snapshot={"title": env_task.title},
        rubric_version=env_task.rubric_versions.first(),
        endpoint_name="fake", n=5, created_by=team.author, cancelled_at=now,
    )
    ended = [
        (RolloutStatus.COMPLETED, now - timedelta(minutes=5), now - timedelta(minutes=1)),  # before
        (RolloutStatus.FAILED, now - timedelta(minutes=5), now - timedelta(minutes=2)),  # before
        (RolloutStatus.COMPLETED, now - timedelta(minutes=1), now + timedelta(seconds=20)),  # its last step, after
        (RolloutStatus.CANCELLED, now - timedelta(minutes=1), now + timedelta(seconds=5)),  # stopped at its next step
        (RolloutStatus.CANCELLED, None, now + timedelta(microseconds=1)),  # never started
    ]
    for index, (status, started, finished) in enumerate(ended):
        Rollout.objects.create(batch=batch, index=index, status=status, started_at=started, finished_at=finished)
    assert batch_progress(batch=batch)["cancel"] == {"before": 2, "after": 2, "never_started": 1, "still_running": 0}

    client.force_login(team.author)
    page = client.get(reverse("batch-detail", args=[batch.pk])).content.decode()
    summary = page[page.index('id="batch-cancel-summary"'):]
    summary = " ".join(summary[:summary.index("</p>")].split())
    assert "<strong>2</strong> rollouts had finished before the cancel" in summary
    assert "<strong>2</strong> ended after it (they were running when you cancelled)" in summary
    assert "<strong>1</strong> never started" in summary
    partial = client.get(reverse("batch-detail", args=[batch.pk]), **HX).content.decode()
    assert 'id="batch-cancel-summary"' in partial
