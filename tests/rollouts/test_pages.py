"""Trial runs through the pages: the trials panel on the task page, the live batch page,
the trajectory viewer, comments, a criterion made from a step, and the comparison.

Rollouts run in-process: the batch's on-commit enqueue is captured and each rollout is
executed with rollouts.agent.rollout_execute against the fake model server (or the
scripted sample model), so a test can look at the pages before, during and after."""

import html
import re
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from authoring.models import Criterion
from llm.models import ModelEndpoint
from rollouts.agent import rollout_execute
from rollouts.models import DEFAULT_SYSTEM_PROMPT, Rollout, RolloutBatch, RolloutStatus, Step, StepComment, StepKind
from tests.fake_llm import Reply

HX = {"HTTP_HX_REQUEST": "true"}
HOSTILE = (
    'Here is my answer. <script>alert("model")</script> <img src=x onerror="alert(1)"> '
    '[click me](javascript:alert(2)) <a href="#" hx-get="/evil" hx-trigger="load">boost</a> <div hx-post="/evil">x</div>'
)


def text(response) -> str:
    return html.unescape(response.content.decode())


class _Markup(HTMLParser):
    """Collects what could run in a page: script elements (other than our own static
    files), images, event handlers, javascript: URLs and htmx attributes aimed at /evil."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "script" and not (attributes.get("src") or "").startswith("/static/"):
            self.found.append(f"<script> {attributes}")
        if tag == "img":
            self.found.append(f"<img> {attributes}")
        for name, value in attrs:
            if name.startswith("on") or "javascript:" in (value or "") or (name.startswith("hx-") and "/evil" in (value or "")):
                self.found.append(f"<{tag} {name}={value!r}>")


def unsafe_markup(page: str) -> list[str]:
    parser = _Markup()
    parser.feed(page)
    return parser.found


def trials_form(endpoint, **overrides) -> dict:
    return {
        "endpoint": endpoint.pk, "n": 2, "mode": "tools", "temperature": "0.7", "max_steps": 10, "max_output_tokens": 1000,
        "time_limit_seconds": 300, "system_prompt": DEFAULT_SYSTEM_PROMPT, **overrides,
    }


def tool_use_script(answer: str = "The purchase price is **$12m** (Deal/Doc 1.md).") -> list[Reply]:
    return [
        Reply(content="Let me look at the data room.", tool_calls=[{"name": "list_files", "arguments": {"recursive": True}}]),
        Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}]),
        Reply(content=answer, input_tokens=300, output_tokens=80),
    ]


@pytest.fixture
def author_client(client, team):
    client.force_login(team.author)
    return client


@pytest.fixture
def task(team, env_task):
    from authoring import services as authoring_services

    doc = env_task.world.documents.get(path="Deal/Doc 1.md")
    authoring_services.document_update(document=doc, user=team.author, base_revision=doc.revision, content="The purchase price is $12m.")
    return env_task


def start(client, task, endpoint, capture, **overrides) -> RolloutBatch:
    with capture(execute=False) as callbacks:
        response = client.post(reverse("task-trials", args=[task.pk]), trials_form(endpoint, **overrides), **HX)
    assert response.status_code == 200, response.content[:500]
    batch = RolloutBatch.objects.get()
    assert response["HX-Redirect"] == reverse("batch-detail", args=[batch.pk])
    assert len(callbacks) == 1  # the rollouts are queued after commit
    return batch


def run_all(batch: RolloutBatch) -> None:
    for rollout in batch.rollouts.order_by("index"):
        rollout_execute(rollout_id=rollout.pk)


# --- The trials panel ---------------------------------------------------------------------

def test_task_page_loads_the_trials_panel_with_the_run_form(author_client, task, endpoint):
    ModelEndpoint.objects.create(name="Sample", kind="scripted")
    page = author_client.get(reverse("task-editor", args=[task.pk])).content.decode()
    assert f'hx-get="{reverse("task-trials", args=[task.pk])}"' in page and 'id="task-trials"' in page

    panel = author_client.get(reverse("task-trials", args=[task.pk]), **HX)
    assert panel.status_code == 200 and "<html" not in panel.content.decode()
    body = text(panel)
    assert "Run trials" in body and "Number of rollouts (1–64)" in body
    assert "fake · fake-model" in body
    assert "Sample — scripted sample model, not a real model" in body
    assert DEFAULT_SYSTEM_PROMPT in body  # prefilled
    assert "With tools" not in body and "No tools (baseline: answer from the prompt alone)" in body
    assert "No trials yet." in body


def test_without_a_model_the_panel_says_what_to_do(author_client, task):
    body = text(author_client.get(reverse("task-trials", args=[task.pk]), **HX))
    assert "No model is configured yet." in body and "Models" in body
    assert 'id="run-trials"' not in body


def test_the_batch_page_lists_the_input_files_it_started_with_and_says_when_they_changed(
        author_client, team, task, endpoint, settings, tmp_path, django_capture_on_commit_callbacks):
    from authoring.services.task_files import task_input_file_add_bytes, task_input_file_remove

    settings.MEDIA_ROOT = tmp_path / "media"
    figures = task_input_file_add_bytes(env_task=task, user=team.author, path="Inputs/figures.csv", data=b"quarter,revenue\nQ1,120\n")
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=1)
    assert batch.task_snapshot["input_files"] == [{"path": "Inputs/figures.csv", "size": 23, "sha256": figures.sha256}]
    page = text(author_client.get(reverse("batch-detail", args=[batch.pk])))
    assert "Input files (1, when the batch started)" in page and "Inputs/figures.csv" in page
    assert "The task's input files have changed since" not in page

    task_input_file_remove(input_file=figures, user=team.author)
    page = text(author_client.get(reverse("batch-detail", args=[batch.pk])))
    assert "The task's input files have changed since" in page and "Inputs/figures.csv" in page  # still what it ran with


def test_reviewer_reads_batches_but_has_no_run_form(client, team, task, endpoint, django_capture_on_commit_callbacks):
    client.force_login(team.author)
    batch = start(client, task, endpoint, django_capture_on_commit_callbacks)
    client.force_login(team.reviewer)
    body = text(client.get(reverse("task-trials", args=[task.pk]), **HX))
    assert 'id="run-trials"' not in body
    assert f'href="{reverse("batch-detail", args=[batch.pk])}"' in body and "2 queued" in body


def test_run_trials_starts_a_frozen_batch_and_opens_its_live_page(author_client, team, task, endpoint, django_capture_on_commit_callbacks):
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=3, mode="no_tools")
    assert (batch.n, batch.mode, batch.temperature, batch.max_steps, batch.max_output_tokens,
            batch.time_limit_seconds) == (3, "no_tools", 0.7, 10, 1000, 300)
    assert batch.created_by == team.author and batch.task_snapshot["prompt"] == task.prompt
    assert batch.rubric_version.is_frozen and batch.rollouts.filter(status="queued").count() == 3
    # The panel lists it, and polls while it is unfinished.
    fragment = author_client.get(reverse("task-trials", args=[task.pk]) + "?part=batches", **HX).content.decode()
    assert fragment.lstrip().startswith('<div id="trials-batches"') and 'hx-trigger="every 2s"' in fragment
    assert "No tools (baseline)" in fragment and "Watch live" in fragment

    # A plain form post (no htmx) is redirected to the batch page.
    with django_capture_on_commit_callbacks(execute=False):
        response = author_client.post(reverse("task-trials", args=[task.pk]), trials_form(endpoint, n=1))
    newest = RolloutBatch.objects.order_by("-pk").first()
    assert response.status_code == 302 and response["Location"] == reverse("batch-detail", args=[newest.pk])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [({"n": 65}, "Number of rollouts: Ensure this value is less than or equal to 64."), ({"temperature": "3"}, "Temperature")],
)
def test_invalid_trials_are_refused_in_the_form_and_keep_what_was_typed(author_client, task, endpoint, overrides, message):
    response = author_client.post(
        reverse("task-trials", args=[task.pk]), trials_form(endpoint, system_prompt="My own instructions.", **overrides), **HX
    )
    assert response.status_code == 422
    body = text(response)
    assert body.lstrip().startswith('<form id="trials-form"') and message in body and "Not started." in body
    assert "My own instructions." in body
    assert not RolloutBatch.objects.exists()


def test_a_reviewer_cannot_run_trials(client, team, task, endpoint):
    client.force_login(team.reviewer)
    response = client.post(reverse("task-trials", args=[task.pk]), trials_form(endpoint), **HX)
    assert response.status_code == 403 and "cannot edit content" in text(response)
    assert not RolloutBatch.objects.exists()


# --- The live batch page ------------------------------------------------------------------

def test_batch_page_is_live_until_every_rollout_ends(author_client, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=2)
    url = reverse("batch-detail", args=[batch.pk])
    page = text(author_client.get(url))
    assert "Trial batch" in page and "Waiting for a worker" in page and "0 of 2" in page
    assert f"revision {task.revision}" in page and f"version {batch.rubric_version.number}" in page
    assert "States fact 1" in page  # the frozen rubric's criteria
    assert 'hx-trigger="every 2s"' in page and 'id="cancel-batch"' in page
    assert "Compare side by side" in page

    fake_llm.script(*tool_use_script())
    first, second = batch.rollouts.order_by("index")
    rollout_execute(rollout_id=first.pk)
    live = author_client.get(url, **HX)
    fragment = live.content.decode()
    assert fragment.lstrip().startswith('<section class="card trials-live" id="batch-live"') and "<html" not in fragment
    assert 'hx-trigger="every 2s"' in fragment  # still polling
    body = text(live)
    assert "1 of 2" in body and "1 completed" in body and "1 queued" in body and "Running" in body
    row = re.search(r'<tr id="rollout-row-1".*?</tr>', fragment, re.S).group(0)
    assert "Completed" in row and ">5<" in row and "Finished with a final answer." in row
    assert "The purchase price is $12m (Deal/Doc 1.md)." in row  # the answer's snippet, as text
    assert row.count('<i class="model">') == 3 and row.count('<i class="tool">') == 2
    assert "500 / 180" in row  # tokens in / out

    fake_llm.script(*tool_use_script())
    rollout_execute(rollout_id=second.pk)
    done = author_client.get(url, **HX)
    fragment = done.content.decode()
    assert 'hx-trigger' not in fragment  # finished: the partial stops polling
    assert "2 of 2" in text(done) and "Finished" in text(done) and 'id="cancel-batch"' not in fragment
    assert "1,000 in / 360 out" in text(done)  # tokens so far
    assert Rollout.objects.filter(batch=batch, status=RolloutStatus.COMPLETED).count() == 2


def test_cancel_stops_the_batch_and_the_fragment_says_so(author_client, team, task, endpoint, django_capture_on_commit_callbacks):
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=3)
    running = batch.rollouts.order_by("index").first()
    Rollout.objects.filter(pk=running.pk).update(status=RolloutStatus.RUNNING, attempts=1, started_at=timezone.now())
    response = author_client.post(reverse("batch-cancel", args=[batch.pk]), **HX)
    assert response.status_code == 200
    fragment = response.content.decode()
    assert 'id="batch-live"' in fragment and "Cancelling…" in fragment and 'id="cancel-batch"' not in fragment
    assert 'hx-trigger="every 2s"' in fragment  # the running one has yet to stop
    assert batch.rollouts.filter(status=RolloutStatus.CANCELLED).count() == 2
    rollout_execute(rollout_id=running.pk)  # its next step sees the cancel
    fragment = author_client.get(reverse("batch-detail", args=[batch.pk]), **HX).content.decode()
    assert "hx-trigger" not in fragment and "3 cancelled" in fragment and ">Cancelled<" in fragment

    # A reviewer may not cancel: the fragment explains, nothing changes.
    RolloutBatch.objects.filter(pk=batch.pk).update(cancelled_at=None)
    author_client.force_login(team.reviewer)
    response = author_client.post(reverse("batch-cancel", args=[batch.pk]), **HX)
    assert response.status_code == 403 and "cannot edit content" in text(response)
    assert RolloutBatch.objects.get(pk=batch.pk).cancelled_at is None


# --- The trajectory viewer ----------------------------------------------------------------

def test_trajectory_reads_step_by_step_with_changes_and_final_answer(
    author_client, task, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=1)
    fake_llm.script(
        Reply(
            content="Let me look.",
            tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}, {"name": "rm_rf", "arguments": {}}],
        ),
        Reply(
            content=None,
            tool_calls=[{"name": "write_file", "arguments": {"path": "Work/Answer.md", "content": "# Answer\n\nThe price is $12m."}}],
        ),
        Reply(content="The price is **$12m**; see Work/Answer.md."),
    )
    run_all(batch)
    rollout = batch.rollouts.get()
    steps = list(rollout.steps.order_by("index"))
    response = author_client.get(reverse("rollout-detail", args=[rollout.pk]))
    page = response.content.decode()
    body = text(response)
    assert "Rollout 1 of trial batch" in body and ">Completed<" in page
    assert DEFAULT_SYSTEM_PROMPT in body and task.prompt in body
    positions = [page.index(f'id="step-{s.pk}"') for s in steps]
    assert positions == sorted(positions)  # in order
    assert 'read_file</code>' in page and '"path": "Deal/Doc 1.md"' in body  # pretty-printed arguments
    assert 'read_file(path="Deal/Doc 1.md")' in body and "The purchase price is $12m." in body  # the tool's result
    assert "error, returned to the model" in body and "rm_rf" in body
    assert "<strong>$12m</strong>" in page  # model text as markdown
    assert 'id="final-answer"' in page and "see Work/Answer.md" in body
    assert "Work/Answer.md" in body and ">new<" in page and '<span class="add">The price is $12m.</span>' in page
    assert "+++" not in page and "@@" not in page  # no diff jargon
    assert "tokens" in body and "took" in body
    assert 'id="steps-tail"' not in page and "hx-trigger" not in page.split('id="trajectory"')[1]  # finished: nothing polls


def test_a_changed_file_shows_its_removed_and_added_lines(author_client, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=1)
    fake_llm.script(
        Reply(
            content=None,
            tool_calls=[{"name": "write_file", "arguments": {"path": "Deal/Doc 1.md", "content": "The purchase price is $13m."}}],
        ),
        Reply(content="Corrected the price."),
    )
    run_all(batch)
    page = author_client.get(reverse("rollout-detail", args=[batch.rollouts.get().pk])).content.decode()
    assert ">modified<" in page and "removed lines in red, added lines in green" in page
    assert '<span class="del">The purchase price is $12m.</span>' in page and '<span class="add">The purchase price is $13m.</span>' in page
    assert task.world.documents.get(path="Deal/Doc 1.md").content == "The purchase price is $12m."  # the world is unchanged


def test_long_tool_results_are_collapsed(author_client, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    from authoring import services as authoring_services

    doc = task.world.documents.get(path="Deal/Doc 1.md")
    authoring_services.document_update(
        document=doc, user=task.created_by, base_revision=doc.revision, content="\n".join(f"Line {i} of the LOI." for i in range(60))
    )
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=1)
    fake_llm.script(Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}]), Reply(content="Done."))
    run_all(batch)
    page = author_client.get(reverse("rollout-detail", args=[batch.rollouts.get().pk])).content.decode()
    assert '<details class="traj-result"><summary>' in page and "lines of result" in page and "Line 59 of the LOI." in page


def test_model_text_and_tool_results_are_sanitized(author_client, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    from authoring import services as authoring_services

    doc = task.world.documents.get(path="Deal/Doc 1.md")
    authoring_services.document_update(document=doc, user=task.created_by, base_revision=doc.revision, content=HOSTILE)
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=2)
    fake_llm.script(
        Reply(content=HOSTILE, tool_calls=[
            {"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}},
            {"name": "search_files", "arguments": {"query": '<script>alert("args")</script>'}},
        ]),
        Reply(content=HOSTILE),
        Reply(content=HOSTILE),
    )
    run_all(batch)
    first = batch.rollouts.get(index=0)
    assert Step.objects.filter(rollout=first, kind=StepKind.TOOL, text__contains="<script>").exists()  # stored as is
    author_client.post(reverse("step-comment-add", args=[first.steps.first().pk]), {"text": HOSTILE}, **HX)
    pages = [
        author_client.get(reverse("rollout-detail", args=[first.pk])),
        author_client.get(reverse("rollout-steps", args=[first.pk]) + "?after=0", **HX),
        author_client.get(reverse("batch-detail", args=[batch.pk])),
        author_client.get(reverse("batch-compare", args=[batch.pk]) + "?a=1&b=2"),
        author_client.get(reverse("step-criterion", args=[first.steps.first().pk])),
    ]
    for response in pages:
        assert response.status_code == 200
        assert unsafe_markup(response.content.decode()) == [], response.request["PATH_INFO"]
    page = pages[0].content.decode()
    assert page.count("&lt;script&gt;alert(") >= 3  # shown as text: model text, tool arguments, tool result
    assert "click me" in page  # the link's text survives, its javascript: URL does not
    batch_page = pages[2].content.decode()
    assert (
        'class="small trials-answer">Here is my answer. &lt;script&gt;alert(&quot;model&quot;)&lt;/script&gt;' in batch_page
    )  # the answer's line, as text


def test_a_running_rollout_streams_new_steps_and_stops_polling_when_it_ends(
    author_client, task, endpoint, django_capture_on_commit_callbacks
):
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=1)
    rollout = batch.rollouts.get()
    Rollout.objects.filter(pk=rollout.pk).update(status=RolloutStatus.RUNNING, attempts=1, started_at=timezone.now())
    Step.objects.create(
        rollout=rollout, index=0, kind=StepKind.MODEL, text="Looking.", tool_calls=[{"id": "a", "name": "list_files", "arguments": {}}]
    )
    page = author_client.get(reverse("rollout-detail", args=[rollout.pk])).content.decode()
    tail_url = reverse("rollout-steps", args=[rollout.pk])
    assert f'hx-get="{tail_url}?after=1" hx-trigger="every 2s"' in page
    assert 'hx-trigger="rollout-progress from:body"' in page  # the summary refreshes on progress

    nothing_new = author_client.get(tail_url + "?after=1", **HX)
    assert "HX-Trigger" not in nothing_new and 'id="step-' not in nothing_new.content.decode()
    assert '?after=1" hx-trigger="every 2s"' in nothing_new.content.decode()

    tool = Step.objects.create(
        rollout=rollout, index=1, kind=StepKind.TOOL, tool_call_id="a", tool_name="list_files", arguments={}, text='{"files": []}'
    )
    more = author_client.get(tail_url + "?after=1", **HX)
    fragment = more.content.decode()
    assert more["HX-Trigger"] == "rollout-progress"
    assert f'id="step-{tool.pk}"' in fragment and "Looking." not in fragment  # only the new step
    assert '?after=2" hx-trigger="every 2s"' in fragment

    final = Step.objects.create(rollout=rollout, index=2, kind=StepKind.MODEL, text="No files: I cannot say.")
    Rollout.objects.filter(pk=rollout.pk).update(
        status=RolloutStatus.COMPLETED, reason="Finished with a final answer.", final_answer=final.text, finished_at=timezone.now()
    )
    last = author_client.get(tail_url + "?after=2", **HX)
    fragment = last.content.decode()
    assert last["HX-Trigger"] == "rollout-progress"
    assert f'id="step-{final.pk}"' in fragment and 'id="final-answer"' in fragment and "hx-trigger" not in fragment
    summary = author_client.get(reverse("rollout-detail", args=[rollout.pk]), **HX).content.decode()
    assert summary.lstrip().startswith('<section class="card traj-summary" id="rollout-summary"') and "hx-trigger" not in summary
    assert ">Completed<" in summary and "3 steps" in summary


# --- Comments -------------------------------------------------------------------------------

@pytest.fixture
def finished_batch(author_client, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=2)
    fake_llm.script(*tool_use_script(), *tool_use_script("Probably $10m."))
    run_all(batch)
    return batch


def test_author_and_reviewer_comment_on_a_step(client, team, finished_batch):
    step = Step.objects.filter(rollout__batch=finished_batch, kind=StepKind.TOOL).order_by("rollout__index", "index").first()
    url = reverse("step-comment-add", args=[step.pk])
    client.force_login(team.author)
    response = client.post(url, {"text": "It should have *searched* first."}, **HX)
    assert response.status_code == 200
    fragment = response.content.decode()
    assert fragment.lstrip().startswith(f'<div class="traj-comments" id="step-{step.pk}-comments"')
    assert "<em>searched</em>" in fragment and team.author.username in fragment
    client.force_login(team.reviewer)
    client.post(url, {"text": "Agreed."}, **HX)
    assert list(StepComment.objects.filter(step=step).values_list("author__username", "text")) == [
        (team.author.username, "It should have *searched* first."), (team.reviewer.username, "Agreed."),
    ]
    page = text(client.get(reverse("rollout-detail", args=[step.rollout_id])))
    assert "Agreed." in page and "It should have searched first." not in page  # rendered as markdown

    empty = client.post(url, {"text": "   "}, **HX)
    assert empty.status_code == 422 and "Write a comment first" in text(empty)
    plain = client.post(url, {"text": "Without htmx."})
    assert plain.status_code == 302 and plain["Location"].endswith(f"#step-{step.pk}")
    assert StepComment.objects.filter(step=step).count() == 3


# --- A criterion from a step -----------------------------------------------------------------

def test_make_a_criterion_from_a_step_links_it_back_as_evidence(author_client, team, task, finished_batch):
    second = finished_batch.rollouts.get(index=1)
    step = second.steps.get(index=4)  # the final answer of rollout 2
    url = reverse("step-criterion", args=[step.pk])
    page = text(author_client.get(url))
    assert "Make a criterion from rollout 2, step 5" in page
    assert 'States that "Probably $10m."' in page  # prefilled from the step
    assert "Evidence: <strong>Rollout 2, step 5</strong>" in page
    rubric = task.rubric_versions.order_by("-number").first()
    assert rubric.is_frozen  # the batch froze it: the criterion goes to a new version
    assert f"version {rubric.number + 1}" in page

    response = author_client.post(
        url,
        {
            "text": "Does not guess a price absent from the data room",
            "points": -3,
            "tag": "pitfall",
            "explanation": "",
            "revision": rubric.revision,
        },
    )
    assert response.status_code == 302 and response["Location"] == reverse("task-editor", args=[task.pk]) + "#rubric"
    criterion = Criterion.objects.get(text="Does not guess a price absent from the data room")
    assert criterion.evidence == {"step": step.pk, "rollout": second.pk, "batch": finished_batch.pk, "label": "Rollout 2, step 5"}
    assert (criterion.points, criterion.tag, criterion.rubric_version.number) == (-3, "pitfall", rubric.number + 1)
    assert finished_batch.rubric_version.criteria.count() == 2  # the batch's version is untouched

    editor = author_client.get(reverse("task-editor", args=[task.pk])).content.decode()
    assert f'href="/rollouts/{second.pk}/#step-{step.pk}">Rollout 2, step 5</a>' in editor
    assert f'id="step-{step.pk}"' in author_client.get(f"/rollouts/{second.pk}/").content.decode()  # the link's target


def test_a_reviewer_cannot_make_a_criterion(client, team, task, finished_batch):
    step = finished_batch.rollouts.get(index=0).steps.get(index=0)
    client.force_login(team.reviewer)
    page = text(client.get(reverse("step-criterion", args=[step.pk])))
    assert "Only authors change the rubric." in page and 'id="add-criterion"' not in page
    response = client.post(reverse("step-criterion", args=[step.pk]), {"text": "Sneaky", "points": 1, "tag": "important"})
    assert response.status_code == 403
    assert not Criterion.objects.filter(text="Sneaky").exists()


def test_an_empty_criterion_is_refused_and_keeps_the_form(author_client, finished_batch):
    step = finished_batch.rollouts.get(index=0).steps.get(index=0)
    response = author_client.post(
        reverse("step-criterion", args=[step.pk]), {"text": "", "points": 1, "tag": "important", "explanation": "Kept"}
    )
    assert response.status_code == 422 and "Not saved." in text(response) and "Kept" in text(response)


# --- Two trajectories side by side --------------------------------------------------------------

def test_compare_two_rollouts_side_by_side(author_client, finished_batch):
    url = reverse("batch-compare", args=[finished_batch.pk])
    response = author_client.get(url + "?a=2&b=1")
    page = response.content.decode()
    body = text(response)
    assert "Rollout 2 and rollout 1, side by side" in body
    left, right = page.split('id="compare-left"')[1].split('id="compare-right"')
    assert "Probably $10m." in left and "Probably $10m." not in right and "$12m" in right
    assert left.count('<article class="traj-step') == right.count('<article class="traj-step') == 5
    assert "hx-post" not in page  # read-only steps
    odd = author_client.get(url + "?a=9&b=1")
    assert "This batch has rollouts 1 to 2" in text(odd)


def test_a_scripted_batch_is_labelled_everywhere(author_client, task, django_capture_on_commit_callbacks):
    scripted = ModelEndpoint.objects.create(name="Sample", kind="scripted")
    batch = start(author_client, task, scripted, django_capture_on_commit_callbacks, n=2)
    run_all(batch)
    rollout = batch.rollouts.get(index=0)
    assert rollout.status == RolloutStatus.COMPLETED and rollout.steps.filter(kind=StepKind.TOOL).exists()
    label = "scripted sample model — not a real model"
    for url in (
        reverse("task-trials", args=[task.pk]), reverse("batch-detail", args=[batch.pk]), reverse("rollout-detail", args=[rollout.pk]),
        reverse("batch-compare", args=[batch.pk]), reverse("step-criterion", args=[rollout.steps.first().pk]),
        reverse("step-exchange", args=[rollout.steps.filter(kind=StepKind.MODEL).first().pk]),
    ):
        assert label in text(author_client.get(url)), url
    exchange = text(author_client.get(reverse("step-exchange", args=[rollout.steps.filter(kind=StepKind.MODEL).first().pk])))
    assert "nothing was sent over an API" in exchange and "Sent to" not in exchange and "chat completions)" not in exchange


def looping(model_steps: int, calls: int = 1):
    """A responder: tool calls until the rollout has `model_steps` model messages, then an answer."""
    names = ["list_files", "search_files", "list_emails"]

    def respond(request):
        done = sum(1 for m in request.body["messages"] if m["role"] == "assistant")
        if done + 1 >= model_steps:
            return Reply(content="Done.")
        return Reply(
            content="Looking.", tool_calls=[{"name": names[i], "arguments": {"query": "price"} if i == 1 else {}} for i in range(calls)]
        )

    return respond


def test_batch_and_trajectory_pages_do_not_grow_with_data(author_client, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    def queries(url: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert author_client.get(url).status_code == 200
        return len(captured)

    def batch_of(n: int, model_steps: int, calls: int) -> RolloutBatch:
        fake_llm.responder = looping(model_steps, calls)
        with django_capture_on_commit_callbacks(execute=False):
            author_client.post(reverse("task-trials", args=[task.pk]), trials_form(endpoint, n=n), **HX)
        batch = RolloutBatch.objects.order_by("-pk").first()
        run_all(batch)
        for rollout in batch.rollouts.all():
            author_client.post(reverse("step-comment-add", args=[rollout.steps.first().pk]), {"text": "Noted."}, **HX)
        return batch

    small, big = batch_of(2, 2, 1), batch_of(6, 4, 2)
    assert big.rollouts.first().steps.count() == 10 > small.rollouts.first().steps.count()
    assert queries(reverse("batch-detail", args=[big.pk])) == queries(reverse("batch-detail", args=[small.pk]))
    assert queries(reverse("rollout-detail", args=[big.rollouts.first().pk])) == queries(
        reverse("rollout-detail", args=[small.rollouts.first().pk])
    )


def test_a_trials_link_opened_on_its_own_is_a_whole_page(author_client, task):
    """The panel's sort and page links swap the list in place; opened in a new tab (no htmx)
    the same address is a page of its own, with the navigation and a way back to the task."""
    page = author_client.get(reverse("task-trials", args=[task.pk]) + "?sort=created")
    html = page.content.decode()
    assert page.status_code == 200 and "<title>Trial runs · " in html and '<nav' in html
    assert f'href="{reverse("task-editor", args=[task.pk])}?tab=trials"' in html and 'id="trials-panel"' in html
    fragment = author_client.get(reverse("task-trials", args=[task.pk]), **HX).content.decode()
    assert "<nav" not in fragment and 'id="trials-panel"' in fragment


def test_a_running_rollout_shows_the_tokens_of_its_saved_steps(author_client, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    """A running rollout writes its own totals only every few seconds; the batch page adds up
    its saved steps instead, so "Tokens so far" is never a stale 0, and a rollout still running
    is never shown as being graded."""
    fake_llm.responder = looping(3)
    batch = start(author_client, task, endpoint, django_capture_on_commit_callbacks, n=2)
    run_all(batch)
    first = batch.rollouts.get(index=0)
    steps = first.steps.filter(kind=StepKind.MODEL)
    spent_in, spent_out = sum(s.input_tokens for s in steps), sum(s.output_tokens for s in steps)
    assert spent_in > 0
    # As it looked mid-run: running, its own totals not written yet.
    Rollout.objects.filter(pk=first.pk).update(status=RolloutStatus.RUNNING, input_tokens=0, output_tokens=0, cost=0, finished_at=None)
    page = text(author_client.get(reverse("batch-detail", args=[batch.pk])))
    row = re.search(r'<tr id="rollout-row-1".*?</tr>', page, re.S).group(0)
    assert f"{spent_in:,} / {spent_out:,}" in row and "grading…" not in row
    usage = re.search(r'<p class="small" id="batch-usage">(.*?)</p>', page, re.S).group(1)
    batch_in = sum(Step.objects.filter(rollout__batch=batch).values_list("input_tokens", flat=True))
    assert usage.startswith("Tokens so far: ") and f"<strong>{batch_in:,} in / " in usage
