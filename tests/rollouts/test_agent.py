import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from authoring import services as authoring_services
from core.exceptions import ApplicationError
from llm.models import ModelCall, ModelEndpoint
from rollouts import services
from rollouts.agent import rollout_execute
from rollouts.models import Grade, Rollout, RolloutStatus, Step, StepKind
from tests.fake_llm import Reply
from workspace.models import OverlayEntry


@pytest.fixture
def task(team, world):
    doc = world.documents.first()
    authoring_services.document_update(document=doc, user=team.author, base_revision=doc.revision, content="The purchase price is $12m.")
    from tests import factories

    return factories.env_task(world, team.author)


def start(task, team, endpoint, django_capture_on_commit_callbacks, **kw):
    with django_capture_on_commit_callbacks(execute=False):
        batch = services.rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, n=kw.pop("n", 1), **kw)
    return batch


def test_multi_step_tool_use_with_parallel_calls_is_saved_step_by_step(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    fake_llm.script(
        Reply(
            content="Let me look.",
            tool_calls=[{"name": "list_files", "arguments": {}}, {"name": "search_files", "arguments": {"query": "price"}}],
        ),
        Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}]),
        Reply(content="The purchase price is $12m (Deal/Doc 1.md)."),
    )
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    rollout_execute(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    assert rollout.status == RolloutStatus.COMPLETED and rollout.final_answer == "The purchase price is $12m (Deal/Doc 1.md)."
    steps = list(rollout.steps.order_by("index"))
    assert [(s.kind, s.tool_name) for s in steps] == [
        ("model", ""), ("tool", "list_files"), ("tool", "search_files"), ("model", ""), ("tool", "read_file"), ("model", ""),
    ]
    assert "The purchase price is $12m." in steps[4].text and not steps[4].is_error
    assert rollout.input_tokens == 300 and steps[0].input_tokens == 100
    second_request = fake_llm.requests[1].body["messages"]
    assert second_request[0]["role"] == "system" and second_request[1]["content"] == task.prompt
    assert [m["role"] for m in second_request[2:]] == ["assistant", "tool", "tool"]
    assert second_request[3]["tool_call_id"] == second_request[2]["tool_calls"][0]["id"]


def test_malformed_tool_calls_go_back_to_the_model_as_errors(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    fake_llm.script(
        Reply(content=None, tool_calls=[{"name": "read_file", "arguments": "{not json"}, {"name": "rm_rf", "arguments": {}}]),
        Reply(content="Sorry, here is my answer."),
    )
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout_execute(rollout_id=batch.rollouts.get().pk)
    tool_steps = list(Step.objects.filter(kind=StepKind.TOOL).order_by("index"))
    assert all(s.is_error for s in tool_steps) and "rm_rf" in tool_steps[1].text
    assert fake_llm.requests[1].body["messages"][-1]["role"] == "tool"


def test_a_refusal_is_a_completed_rollout_with_that_answer(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    fake_llm.script(Reply(content="I can't help with that."))
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout_execute(rollout_id=batch.rollouts.get().pk)
    rollout = batch.rollouts.get()
    assert rollout.status == RolloutStatus.COMPLETED and rollout.final_answer == "I can't help with that."


def test_max_steps_and_time_limit_end_a_rollout_with_a_reason(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    fake_llm.responder = lambda request: Reply(content=None, tool_calls=[{"name": "list_files", "arguments": {}}])
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks, max_steps=3)
    rollout_execute(rollout_id=batch.rollouts.get().pk)
    rollout = batch.rollouts.get()
    assert rollout.status == RolloutStatus.FAILED and "limit of 3 model steps" in rollout.reason
    assert rollout.steps.filter(kind=StepKind.MODEL).count() == 3

    fake_llm.responder = lambda request: Reply(content=None, tool_calls=[{"name": "list_files", "arguments": {}}], delay=0.6)
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks, time_limit_seconds=10)
    rollout = batch.rollouts.get()
    Rollout.objects.filter(pk=rollout.pk).update(started_at=timezone.now() - timezone.timedelta(seconds=9))
    Rollout.objects.filter(pk=rollout.pk).update(status=RolloutStatus.QUEUED)
    rollout_execute(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    assert rollout.status == RolloutStatus.FAILED and "time limit of 10 s" in rollout.reason


def test_model_failures_are_a_readable_reason(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    fake_llm.responder = lambda request: Reply(status=401, content="bad key")
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout_execute(rollout_id=batch.rollouts.get().pk)
    rollout = batch.rollouts.get()
    assert rollout.status == RolloutStatus.FAILED and "refused the API key" in rollout.reason


def test_writes_land_in_the_rollouts_own_overlay(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    fake_llm.script(
        Reply(content=None, tool_calls=[{"name": "write_file", "arguments": {"path": "Work/Answer.md", "content": "# Answer\n\n$12m"}}]),
        Reply(content="Written to Work/Answer.md."),
    )
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks, n=2)
    first, second = batch.rollouts.order_by("index")
    rollout_execute(rollout_id=first.pk)
    first.refresh_from_db()
    assert OverlayEntry.objects.get(overlay=first.overlay).path == "Work/Answer.md"
    assert not task.world.documents.filter(path="Work/Answer.md").exists()
    fake_llm.script(Reply(content="Nothing to write."))
    rollout_execute(rollout_id=second.pk)
    second.refresh_from_db()
    assert second.overlay_id != first.overlay_id and not OverlayEntry.objects.filter(overlay=second.overlay).exists()


def test_the_claim_reads_the_overlay_and_what_was_written_into_it_before_the_start(
    team, task, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    from workspace.services import overlay_entry_upsert

    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    # An author may write into a rollout's workspace (over MCP) before its rollout starts.
    overlay_entry_upsert(overlay=rollout.overlay, path="Notes/Brief.md", kind="file", format="md", content="Read me first.", metadata={})
    fake_llm.script(
        Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "Notes/Brief.md"}}]),
        Reply(content="Read the brief."),
    )
    with CaptureQueriesContext(connection) as queries:
        rollout_execute(rollout_id=rollout.pk)
    assert Step.objects.get(rollout=rollout, kind=StepKind.TOOL).text.count("Read me first.") == 1
    # The claim, then the rollout with its overlay in one read and the entries in another; never again.
    sql = [q["sql"] for q in queries.captured_queries]
    assert sql[0].startswith('UPDATE "rollouts_rollout"')
    assert sql[1].startswith("SELECT") and '"workspace_overlay"' in sql[1]
    entries = [i for i, q in enumerate(sql) if q.startswith('SELECT "workspace_overlayentry"')]
    assert len(entries) == 1 and entries[0] <= 3  # (after the batch's one read, for a batch's first rollout)
    assert not [q for q in sql[entries[0] + 1 :] if q.startswith("SELECT") and "workspace_overlay" in q]


def test_no_tools_baseline_answers_from_the_prompt_alone(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    fake_llm.script(Reply(content="Probably $10m."))
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks, mode="no_tools")
    rollout_execute(rollout_id=batch.rollouts.get().pk)
    assert "tools" not in fake_llm.requests[0].body
    assert batch.rollouts.get().final_answer == "Probably $10m."


def test_a_killed_rollout_resumes_from_its_last_saved_step_and_a_duplicate_does_nothing(
    team, task, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    # The first delivery saved a model step asking for two tools and one result, then died.
    Rollout.objects.filter(pk=rollout.pk).update(status=RolloutStatus.RUNNING, attempts=1, started_at=timezone.now())
    Step.objects.create(rollout=rollout, index=0, kind=StepKind.MODEL, tool_calls=[
        {"id": "a", "name": "list_files", "arguments": {}, "raw_arguments": "{}"},
        {"id": "b", "name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}, "raw_arguments": ""},
    ])
    Step.objects.create(rollout=rollout, index=1, kind=StepKind.TOOL, tool_call_id="a", tool_name="list_files", text="[...]")
    fake_llm.script(Reply(content="Done: $12m."))
    rollout_execute(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    assert rollout.status == RolloutStatus.COMPLETED and rollout.attempts == 2
    assert list(rollout.steps.values_list("index", "kind", "tool_call_id")) == [
        (0, "model", ""),
        (1, "tool", "a"),
        (2, "tool", "b"),
        (3, "model", ""),
    ]
    assert len(fake_llm.requests) == 1 and fake_llm.requests[0].body["messages"][-1]["tool_call_id"] == "b"
    rollout_execute(rollout_id=rollout.pk)  # delivered again: finished rollouts are left alone
    assert rollout.steps.count() == 4 and len(fake_llm.requests) == 1


def test_cancel_stops_queued_and_running_rollouts(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks, n=3)
    running = batch.rollouts.order_by("index").first()
    Rollout.objects.filter(pk=running.pk).update(status=RolloutStatus.RUNNING, attempts=1, started_at=timezone.now())
    assert services.rollout_batch_cancel(batch=batch, user=team.author) == 2
    rollout_execute(rollout_id=running.pk)  # its next step sees the cancel
    assert set(batch.rollouts.values_list("status", flat=True)) == {RolloutStatus.CANCELLED}
    assert fake_llm.requests == []


def test_a_batch_freezes_the_task_and_rubric_it_runs_against(team, task, endpoint, django_capture_on_commit_callbacks):
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks, n=4)
    rubric = task.rubric_versions.get()
    assert batch.rubric_version == rubric and rubric.is_frozen and batch.rollouts.count() == 4
    assert batch.task_snapshot["prompt"] == task.prompt
    authoring_services.criterion_add(env_task=task, user=team.author, base_revision=rubric.revision, text="New", points=1)
    assert task.rubric_versions.count() == 2 and batch.rubric_version.criteria.count() == 2


@pytest.mark.parametrize(
    ("field", "value", "message"), [("n", 65, "between 1 and 64"), ("n", 0, "between 1 and 64"), ("max_steps", 0, "Max steps")]
)
def test_bad_batch_settings_are_refused(team, task, endpoint, field, value, message):
    with pytest.raises(ApplicationError, match=message):
        services.rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, **{"n": 1, field: value})


def test_reviewers_cannot_run_trials(team, task, endpoint):
    with pytest.raises(ApplicationError, match="cannot edit content"):
        services.rollout_batch_start(env_task=task, user=team.reviewer, endpoint=endpoint, n=1)


def test_the_scripted_sample_model_walks_a_labelled_trajectory(team, task, django_capture_on_commit_callbacks):
    scripted = ModelEndpoint.objects.create(name="Sample", kind="scripted")
    batch = start(task, team, scripted, django_capture_on_commit_callbacks)
    rollout_execute(rollout_id=batch.rollouts.get().pk)
    rollout = batch.rollouts.get()
    assert rollout.status == RolloutStatus.COMPLETED and batch.endpoint_scripted
    assert list(rollout.steps.filter(kind=StepKind.TOOL).values_list("tool_name", flat=True)) == ["list_files", "read_file"]
    assert rollout.final_answer.startswith("[Sample text from the scripted model]")


def test_a_duplicate_message_for_a_live_rollout_does_nothing(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    Rollout.objects.filter(pk=rollout.pk).update(
        status=RolloutStatus.RUNNING, attempts=3, started_at=timezone.now(), heartbeat_at=timezone.now()
    )
    rollout_execute(rollout_id=rollout.pk)  # another worker is alive and beating: leave it alone
    rollout.refresh_from_db()
    assert rollout.status == RolloutStatus.RUNNING and rollout.attempts == 3 and fake_llm.requests == []


def test_a_claim_that_takes_nothing_reads_no_overlay(team, task, endpoint, django_capture_on_commit_callbacks, django_assert_num_queries):
    from rollouts import agent
    from workspace.services import overlay_entry_upsert

    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    overlay_entry_upsert(overlay=rollout.overlay, path="Notes/Big.md", kind="file", format="md", content="x" * 1000, metadata={})
    Rollout.objects.filter(pk=rollout.pk).update(
        status=RolloutStatus.RUNNING, attempts=1, started_at=timezone.now(), heartbeat_at=timezone.now()
    )
    with django_assert_num_queries(1):  # the claim's UPDATE, which took nothing
        assert agent._claim(rollout.pk) is None  # a live rollout: a duplicate message takes nothing
    Rollout.objects.filter(pk=rollout.pk).update(status=RolloutStatus.QUEUED, attempts=0, heartbeat_at=None)
    claimed, entries = agent._claim(rollout.pk)
    assert claimed.pk == rollout.pk and claimed.status == RolloutStatus.RUNNING and claimed.attempts == 1
    assert [e.path for e in entries] == ["Notes/Big.md"]


# --- the hot path: overlays made at the start, the pulse, totals ---------------------------

def test_each_tool_rollout_gets_its_own_overlay_when_the_batch_starts(team, task, endpoint, django_capture_on_commit_callbacks):
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks, n=3)
    overlays = [r.overlay for r in batch.rollouts.select_related("overlay")]
    assert all(overlays) and len({o.pk for o in overlays}) == 3
    assert [o.label for o in overlays] == [f"Rollout {i} of batch {batch.pk}" for i in (1, 2, 3)]
    assert all(o.world_id == task.world_id and o.purpose == "rollout" for o in overlays)
    baseline = start(task, team, endpoint, django_capture_on_commit_callbacks, n=2, mode="no_tools")
    assert not baseline.rollouts.filter(overlay__isnull=False).exists()


def test_the_agent_writes_into_the_overlay_made_at_the_start(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    fake_llm.script(
        Reply(content=None, tool_calls=[{"name": "write_file", "arguments": {"path": "Out/memo.md", "content": "Price: $12m."}}]),
        Reply(content="Wrote Out/memo.md."),
    )
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    overlay_id = rollout.overlay_id
    rollout_execute(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    assert rollout.status == RolloutStatus.COMPLETED and rollout.overlay_id == overlay_id
    assert OverlayEntry.objects.get(overlay_id=overlay_id).path == "Out/memo.md"


def test_a_rollout_without_an_overlay_gets_one_on_the_worker(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    Rollout.objects.filter(pk=rollout.pk).update(overlay=None)  # as batches started before overlays were made up front
    fake_llm.script(Reply(content="Done."))
    rollout_execute(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    assert rollout.status == RolloutStatus.COMPLETED and rollout.overlay.label == f"Rollout 1 of batch {batch.pk}"


def test_totals_are_sums_over_the_saved_steps_after_a_resume(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    Rollout.objects.filter(pk=rollout.pk).update(status=RolloutStatus.RUNNING, attempts=1, started_at=timezone.now())
    Step.objects.create(rollout=rollout, index=0, kind=StepKind.MODEL, text="Looking.", input_tokens=1000, output_tokens=7, cost="0.5",
                        tool_calls=[{"id": "a", "name": "list_files", "arguments": {}, "raw_arguments": ""}])
    fake_llm.script(Reply(content="Done.", input_tokens=10, output_tokens=3))
    rollout_execute(rollout_id=rollout.pk)  # a redelivery: resumes after the saved model step
    rollout.refresh_from_db()
    assert rollout.status == RolloutStatus.COMPLETED and rollout.steps.count() == 3
    assert (rollout.input_tokens, rollout.output_tokens) == (1010, 10) and rollout.cost > 0.5


@pytest.mark.django_db(transaction=True)
def test_a_cancel_stops_a_running_rollout_within_the_pulse(team, task, endpoint, fake_llm, monkeypatch):
    """The cancel is read at most once per PULSE_SECONDS: a running rollout stops within that
    (plus the model call in flight), not after its last step."""
    import threading
    import time as clock

    from rollouts.agent import PULSE_SECONDS

    fake_llm.responder = lambda request: Reply(content="Looking.", tool_calls=[{"name": "list_files", "arguments": {}}], delay=0.1)
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)  # this test runs the rollout itself, not through the broker
    batch = services.rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, n=1, max_steps=200)
    rollout = batch.rollouts.get()
    cancelled_at = {}

    def cancel_after_two_steps():
        while Step.objects.filter(rollout=rollout, kind=StepKind.MODEL).count() < 2:
            clock.sleep(0.02)
        services.rollout_batch_cancel(batch=batch, user=team.author)
        cancelled_at["t"] = clock.monotonic()

    canceller = threading.Thread(target=cancel_after_two_steps)
    canceller.start()
    rollout_execute(rollout_id=rollout.pk)
    stopped = clock.monotonic()
    canceller.join(timeout=10)
    rollout.refresh_from_db()
    assert rollout.status == RolloutStatus.CANCELLED and rollout.reason == "Cancelled while running."
    assert stopped - cancelled_at["t"] < PULSE_SECONDS + 0.5
    model_steps = rollout.steps.filter(kind=StepKind.MODEL).count()
    assert 2 <= model_steps < 200 and rollout.input_tokens == 100 * model_steps  # final totals cover every saved step


@pytest.mark.django_db(transaction=True)
def test_every_model_call_is_in_the_log_and_a_write_is_saved_before_it_runs(team, task, endpoint, fake_llm, monkeypatch):
    """Reads are saved with the model step that asked for them; a write's step is saved
    before the write runs. The fake server looks at the database from its own thread."""
    seen_before_write = []

    def respond(request):
        done = sum(1 for m in request.body["messages"] if m["role"] == "tool")
        if done == 0:
            return Reply(content=None, tool_calls=[{"name": "list_files", "arguments": {}}])
        if done == 1:
            return Reply(content=None, tool_calls=[{"name": "write_file", "arguments": {"path": "Work/A.md", "content": "$12m"}}])
        seen_before_write.append(list(Step.objects.order_by("index").values_list("kind", "tool_name")))
        connection.close()  # this thread's own connection
        return Reply(content="Wrote Work/A.md.")

    fake_llm.responder = respond
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)  # the test runs the rollout itself
    batch = services.rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, n=1)
    rollout = batch.rollouts.get()
    rollout_execute(rollout_id=rollout.pk)
    assert list(rollout.steps.order_by("index").values_list("kind", "tool_name")) == [
        ("model", ""), ("tool", "list_files"), ("model", ""), ("tool", "write_file"), ("model", ""),
    ]
    assert seen_before_write == [[("model", ""), ("tool", "list_files"), ("model", ""), ("tool", "write_file")]]
    assert ModelCall.objects.filter(purpose="rollout", outcome="ok").count() == 3  # one row per call, saved with its step


@pytest.mark.django_db(transaction=True)
def test_a_duplicate_delivery_that_loses_the_race_keeps_its_model_call_in_the_log(team, task, endpoint, fake_llm, monkeypatch):
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)  # the test runs the rollout itself
    batch = services.rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, n=1)
    rollout = batch.rollouts.get()

    def respond(request):  # while this delivery waits for the model, another one saves step 0
        Step.objects.create(rollout=rollout, index=0, kind=StepKind.MODEL, text="The other delivery's step.")
        connection.close()
        return Reply(content=None, tool_calls=[{"name": "list_files", "arguments": {}}])

    fake_llm.responder = respond
    rollout_execute(rollout_id=rollout.pk)
    assert list(rollout.steps.values_list("text", flat=True)) == ["The other delivery's step."]
    assert ModelCall.objects.filter(purpose="rollout").count() == 1


def test_a_rollout_whose_worker_died_after_a_cancel_is_cancelled_not_resumed(
    team, task, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    Rollout.objects.filter(pk=rollout.pk).update(status=RolloutStatus.RUNNING, attempts=1, started_at=timezone.now(), heartbeat_at=None)
    services.rollout_batch_cancel(batch=batch, user=team.author)  # flags the running rollout; its worker is gone
    rollout_execute(rollout_id=rollout.pk)  # the redelivered message
    rollout.refresh_from_db()
    assert (rollout.status, rollout.reason, rollout.attempts) == (RolloutStatus.CANCELLED, "Cancelled while running.", 1)
    assert fake_llm.requests == []


def test_a_batch_is_read_once_for_its_rollouts_and_an_endpoint_edit_reaches_later_ones(
    team, task, endpoint, fake_llm, django_capture_on_commit_callbacks, monkeypatch
):
    from rollouts import agent

    batch = start(task, team, endpoint, django_capture_on_commit_callbacks, n=3, mode="no_tools")
    first, second, third = batch.rollouts.order_by("index")
    fake_llm.responder = lambda request: Reply(content="$12m")
    rollout_execute(rollout_id=first.pk)
    # The next rollout reads no batch, endpoint, task or world: the claim, then the rollout (a baseline has no overlay).
    with CaptureQueriesContext(connection) as queries:
        rollout_execute(rollout_id=second.pk)
    claim = 2
    assert queries.captured_queries[0]["sql"].startswith('UPDATE "rollouts_rollout"')
    selects = [q["sql"] for q in queries.captured_queries[claim:] if q["sql"].startswith("SELECT")]
    assert not [
        sql
        for sql in selects
        if any(table in sql for table in ("rolloutbatch", "modelendpoint", "envtask", "authoring_world", "rollouts_rollout", "criterion"))
    ], selects
    assert Grade.objects.filter(rollout=second).count() == 1  # its rubric has criteria: queued for grading
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(enabled=False)
    monkeypatch.setattr(agent, "BATCH_SECONDS", 0.0)  # the window has passed
    rollout_execute(rollout_id=third.pk)
    states = dict(batch.rollouts.values_list("index", "status"))
    assert states == {0: RolloutStatus.COMPLETED, 1: RolloutStatus.COMPLETED, 2: RolloutStatus.FAILED}
    assert "disabled" in batch.rollouts.get(index=2).reason


def test_a_completed_rollout_of_a_rubric_without_criteria_is_not_graded(
    team, world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    bare = authoring_services.env_task_create(world=world, user=team.author, title="Bare", prompt="Price?", reference_answer="$12m")
    fake_llm.responder = lambda request: Reply(content="$12m")
    batch = start(bare, team, endpoint, django_capture_on_commit_callbacks, mode="no_tools")
    rollout_execute(rollout_id=batch.rollouts.get().pk)
    assert batch.rollouts.get().status == RolloutStatus.COMPLETED and not Grade.objects.exists()


def test_a_model_call_stays_in_the_log_when_its_read_is_interrupted(
    team, task, endpoint, fake_llm, monkeypatch, django_capture_on_commit_callbacks
):
    from rollouts import agent

    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    fake_llm.script(Reply(content=None, tool_calls=[{"name": "list_files", "arguments": {}}]))

    def interrupted(**kwargs):
        raise KeyboardInterrupt  # a shutdown in the middle of the read (execute() turns errors into results)

    monkeypatch.setattr(agent, "execute", interrupted)
    with pytest.raises(KeyboardInterrupt):
        rollout_execute(rollout_id=batch.rollouts.get().pk)
    assert ModelCall.objects.filter(purpose="rollout", outcome="ok").count() == 1
    assert not Step.objects.exists()  # asked again on resume: the read changed nothing


SEND = {"name": "send_email", "arguments": {"to": ["partner@example.com"], "subject": "Price", "body": "It is $12m."}}
DELETE = {"name": "delete_file", "arguments": {"path": "Out/draft.md"}}


def _changes(rollout) -> dict:
    """The rollout overlay's sent emails (subjects) and whether its draft is still there."""
    entries = OverlayEntry.objects.filter(overlay=rollout.overlay)
    return {"emails": list(entries.filter(kind="email").values_list("metadata__subject", flat=True)),
            "draft": entries.filter(path="Out/draft.md").exists()}


@pytest.mark.parametrize("call", [SEND, DELETE], ids=["send_email", "delete_overlay_only_file"])
def test_a_write_cut_off_by_a_kill_is_made_exactly_once_on_resume(
    team, task, endpoint, fake_llm, monkeypatch, django_capture_on_commit_callbacks, call
):
    """The worker dies after the write ran and before its result was saved: the write and its
    result (the write's idempotency key) commit together, so neither is kept, and the resumed
    rollout makes the write once."""
    from rollouts import agent
    from workspace.services import overlay_entry_upsert

    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    overlay_entry_upsert(overlay=rollout.overlay, path="Out/draft.md", kind="file", format="md", content="Draft.", metadata={})
    fake_llm.script(Reply(content=None, tool_calls=[call]), Reply(content="Done."))
    real_execute = agent.execute

    def killed_after_the_write(**kwargs):
        real_execute(**kwargs)
        raise KeyboardInterrupt  # the worker dies here (execute() turns errors into results)

    monkeypatch.setattr(agent, "execute", killed_after_the_write)
    with pytest.raises(KeyboardInterrupt):
        rollout_execute(rollout_id=rollout.pk)
    assert _changes(rollout) == {"emails": [], "draft": True}  # rolled back with its unsaved result
    assert [s.kind for s in rollout.steps.order_by("index")] == [StepKind.MODEL]

    monkeypatch.setattr(agent, "execute", real_execute)
    Rollout.objects.filter(pk=rollout.pk).update(heartbeat_at=None)  # its heartbeat went stale: taken over
    rollout_execute(rollout_id=rollout.pk)
    sent = ["Price"] if call is SEND else []
    assert _changes(rollout) == {"emails": sent, "draft": call is not DELETE}
    result = rollout.steps.get(index=1)
    assert result.tool_call_id == fake_llm.requests[1].body["messages"][2]["tool_calls"][0]["id"] and not result.is_error
    assert batch.rollouts.get().status == RolloutStatus.COMPLETED and len(fake_llm.requests) == 2


def test_a_write_whose_result_was_saved_is_not_made_again_on_resume(
    team, task, endpoint, fake_llm, monkeypatch, django_capture_on_commit_callbacks
):
    """The worker dies after the write and its result committed, during the next model call:
    the resumed rollout finds the result under the write's key and sends no second email."""
    from rollouts import agent

    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    fake_llm.script(Reply(content=None, tool_calls=[SEND]), Reply(content="Done."))
    real_chat, calls = agent.chat, []

    def chat_killed_on_the_second_call(**kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_chat(**kwargs)

    monkeypatch.setattr(agent, "chat", chat_killed_on_the_second_call)
    with pytest.raises(KeyboardInterrupt):
        rollout_execute(rollout_id=rollout.pk)
    assert _changes(rollout)["emails"] == ["Price"]
    Rollout.objects.filter(pk=rollout.pk).update(heartbeat_at=None)
    rollout_execute(rollout_id=rollout.pk)
    assert _changes(rollout)["emails"] == ["Price"]  # sent once
    assert [(s.kind, s.tool_name) for s in rollout.steps.order_by("index")] == [("model", ""), ("tool", "send_email"), ("model", "")]
    assert batch.rollouts.get().status == RolloutStatus.COMPLETED


def test_the_world_is_read_once_for_a_batchs_rollouts_and_an_edit_reaches_later_ones(
    team, task, endpoint, fake_llm, monkeypatch, django_capture_on_commit_callbacks
):
    from rollouts import agent

    batch = start(task, team, endpoint, django_capture_on_commit_callbacks, n=3)
    first, second, third = batch.rollouts.order_by("index")

    def respond(request):
        if request.body["messages"][-1]["role"] == "tool":
            return Reply(content="Read it.")
        return Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}])

    fake_llm.responder = respond
    rollout_execute(rollout_id=first.pk)
    with CaptureQueriesContext(connection) as queries:
        rollout_execute(rollout_id=second.pk)
    assert not [q["sql"] for q in queries.captured_queries if "authoring_document" in q["sql"]]
    doc = task.world.documents.get(path="Deal/Doc 1.md")
    authoring_services.document_update(document=doc, user=team.author, base_revision=doc.revision, content="The purchase price is $15m.")
    monkeypatch.setattr(agent, "BATCH_SECONDS", 0.0)  # the window has passed
    rollout_execute(rollout_id=third.pk)
    read = {s.rollout.index: s.text for s in Step.objects.filter(kind=StepKind.TOOL).select_related("rollout")}
    assert "$12m" in read[0] and "$12m" in read[1] and "$15m" in read[2]


@pytest.mark.django_db(transaction=True)
def test_a_rollout_whose_endpoint_is_deleted_as_it_runs_says_so(team, task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    """The worker read the batch with its endpoint moments before an admin deleted it (the
    batch is kept for BATCH_SECONDS): the model call's row of the log cannot point at it."""
    from rollouts import agent

    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    agent.batch_context(batch.pk)
    endpoint.delete()
    fake_llm.script(Reply(content="Done."))
    rollout_execute(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    assert rollout.status == RolloutStatus.FAILED and rollout.reason == agent.ENDPOINT_DELETED


@pytest.mark.parametrize(("attempts", "model_steps", "resumed"), [(3, 0, False), (3, 2, True), (4, 2, True), (5, 2, False)])
def test_only_attempts_that_got_nowhere_use_up_a_rollouts_limit(
    team, task, endpoint, fake_llm, django_capture_on_commit_callbacks, attempts, model_steps, resumed
):
    """A rollout whose workers keep being killed while it moves on (each attempt saved a step)
    is resumed; one that got nowhere in MAX_ATTEMPTS (3) more attempts is failed for good."""
    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    Rollout.objects.filter(pk=rollout.pk).update(status=RolloutStatus.RUNNING, attempts=attempts, started_at=timezone.now())
    for index in range(model_steps):
        Step.objects.create(rollout=rollout, index=index, kind=StepKind.MODEL, text="Thinking.")
    rollout_execute(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    if resumed:
        assert (rollout.status, rollout.attempts) == (RolloutStatus.COMPLETED, attempts + 1)  # (its last step was the answer)
    else:
        assert (rollout.status, rollout.attempts) == (RolloutStatus.FAILED, attempts)
        assert rollout.reason == "The worker running this rollout was interrupted too many times."


def test_a_kill_between_a_rollouts_end_and_its_grade_request_leaves_neither(
    team, task, endpoint, fake_llm, monkeypatch, django_capture_on_commit_callbacks
):
    """The end and the grade request commit together, so a completed rollout is always graded."""
    from rollouts import agent

    batch = start(task, team, endpoint, django_capture_on_commit_callbacks)
    rollout = batch.rollouts.get()
    fake_llm.script(Reply(content="The purchase price is $12m."))
    real_graded = agent.rollout_graded

    def killed(**kwargs):
        raise KeyboardInterrupt  # the worker dies after the end was written, before the grade was asked for

    monkeypatch.setattr(agent, "rollout_graded", killed)
    with pytest.raises(KeyboardInterrupt):
        rollout_execute(rollout_id=rollout.pk)
    assert Rollout.objects.get(pk=rollout.pk).status == RolloutStatus.RUNNING and not Grade.objects.exists()

    monkeypatch.setattr(agent, "rollout_graded", real_graded)
    Rollout.objects.filter(pk=rollout.pk).update(heartbeat_at=None)  # taken over once stale
    rollout_execute(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    assert (rollout.status, rollout.final_answer) == (RolloutStatus.COMPLETED, "The purchase price is $12m.")
    assert Grade.objects.filter(rollout=rollout).count() == 1 and len(fake_llm.requests) == 1  # not asked again


def test_the_agent_sees_the_tasks_input_files_laid_over_the_world(team, task, world, endpoint, fake_llm, settings, tmp_path,
                                                                   django_capture_on_commit_callbacks):
    from authoring.services.task_files import task_input_file_add_bytes
    from tests import factories

    settings.MEDIA_ROOT = tmp_path / "media"
    task_input_file_add_bytes(env_task=task, user=team.author, path="Inputs/figures.csv", data=b"quarter,revenue\nQ1,120\nQ2,135\n")
    task_input_file_add_bytes(env_task=task, user=team.author, path="Deal/Doc 1.md", data=b"The purchase price is $14m (task file).")
    fake_llm.script(
        Reply(content=None, tool_calls=[{"name": "list_files", "arguments": {"recursive": True}}]),
        Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "Inputs/figures.csv"}},
                                        {"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}]),
        Reply(content="Q2 revenue was 135; the price is $14m."),
    )
    rollout = start(task, team, endpoint, django_capture_on_commit_callbacks).rollouts.get()
    rollout_execute(rollout_id=rollout.pk)
    listing, figures, deal = [s.text for s in rollout.steps.filter(kind=StepKind.TOOL).order_by("index")]
    assert "Inputs/figures.csv" in listing and "Deal/Doc 2.md" in listing  # the task's file and the world's
    assert "Q2" in figures and "135" in figures
    assert "$14m (task file)" in deal and "$12m" not in deal  # the task's file wins over the world's at its path

    # Another task on the same world, run in the same worker process, does not see them.
    other = factories.env_task(world, team.author, title="Another task on the same world")
    fake_llm.script(
        Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}},
                                        {"name": "read_file", "arguments": {"path": "Inputs/figures.csv"}}]),
        Reply(content="The price is $12m."),
    )
    rollout = start(other, team, endpoint, django_capture_on_commit_callbacks).rollouts.get()
    rollout_execute(rollout_id=rollout.pk)
    deal, figures = rollout.steps.filter(kind=StepKind.TOOL).order_by("index")
    assert "$12m" in deal.text and not deal.is_error
    assert figures.is_error and "No file at 'Inputs/figures.csv'" in figures.text


def test_a_rollouts_changes_compare_the_tasks_input_files_too(team, task, endpoint, fake_llm, settings, tmp_path,
                                                              django_capture_on_commit_callbacks):
    """An input file the agent rewrote is modified (not added), one it deleted is deleted
    (not left out): the trajectory page, the API and the checks read the same changes."""
    from authoring.services.task_files import task_input_file_add_bytes
    from workspace.selectors import overlay_diff

    settings.MEDIA_ROOT = tmp_path / "media"
    task_input_file_add_bytes(env_task=task, user=team.author, path="Inputs/figures.csv", data=b"quarter,revenue\nQ1,120\n")
    task_input_file_add_bytes(env_task=task, user=team.author, path="Inputs/notes.md", data=b"Draft notes.")
    fake_llm.script(
        Reply(content=None, tool_calls=[
            {"name": "write_file", "arguments": {"path": "Inputs/figures.csv", "content": "quarter,revenue\nQ1,125\n"}},
            {"name": "delete_file", "arguments": {"path": "Inputs/notes.md"}},
        ]),
        Reply(content="Corrected Q1."),
    )
    rollout = start(task, team, endpoint, django_capture_on_commit_callbacks).rollouts.get()
    rollout_execute(rollout_id=rollout.pk)
    rollout.refresh_from_db()
    changes = {c.path: c for c in overlay_diff(overlay=rollout.overlay, env_task_id=task.pk)}
    assert {path: c.action for path, c in changes.items()} == {"Inputs/figures.csv": "modified", "Inputs/notes.md": "deleted"}
    assert "-Q1,120" in changes["Inputs/figures.csv"].diff and "+Q1,125" in changes["Inputs/figures.csv"].diff

