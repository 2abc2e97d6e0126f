import re
from datetime import timedelta

import pytest
from django.utils import timezone

from authoring import services as authoring_services
from core.exceptions import ApplicationError
from rollouts import services as rollout_services
from rollouts.agent import rollout_execute
from rollouts.grading.services import grade_execute
from rollouts.models import Grade, GradeStatus, ProbeRun, ProbeRunStatus, Rollout, RolloutStatus
from tests import factories
from tests.fake_llm import Reply
from verification.selectors import criterion_agreement, difficulty, probe_results, ranking_agreement
from verification.services import expert_verdict_set, probe_run_start, probe_run_write_cheats, probe_runs_recover, ranking_set


def rubric_task(team, world, criteria):
    env_task = authoring_services.env_task_create(world=world, user=team.author, title="Price",
                                                  prompt="Read the data room and state the purchase price.",
                                                  reference_answer="The purchase price is $12,000,000.")
    rubric = env_task.rubric_versions.get()
    for text, points, config in criteria:
        authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text=text, points=points,
                                         tag="pitfall" if points < 0 else "essential", grader_kind="check", grader_config=config)
        rubric.refresh_from_db()
    return env_task


def run_probes(env_task, team, endpoint, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = probe_run_start(env_task=env_task, user=team.author, judge_endpoint=endpoint)
    for grade in Grade.objects.filter(probe__run=run):
        grade_execute(grade_id=grade.pk)
    rows: dict[str, list] = {}
    for row in probe_results(run=run):
        rows.setdefault(row["probe"].kind, []).append(row)
    return rows


def test_probes_flag_a_weak_rubric_and_the_criteria_they_fooled(team, world, endpoint, django_capture_on_commit_callbacks):
    weak = rubric_task(team, world, [("Mentions the number 12", 5, {"check": "contains", "value": "12"})])
    rows = run_probes(weak, team, endpoint, django_capture_on_commit_callbacks)
    assert set(rows) == {
        "hedging",
        "near_miss",
        "unsupported",
        "echo_criteria",
        "claims_done",
        "restate_prompt",
        "empty",
        "refusal",
        "reference",
    }
    [hedge] = rows["hedging"]  # the reference's one amount, $12,000,000, among three wrong ones
    assert hedge["flagged"] and [c.text for c in hedge["fooled"]] == ["Mentions the number 12"]
    assert "$12,000,000" in hedge["probe"].answer and "$13,200,000" in hedge["probe"].answer
    assert not rows["echo_criteria"][0]["flagged"]  # the rubric's terms without the value it names
    assert not rows["empty"][0]["flagged"] and not rows["refusal"][0]["flagged"]
    [control] = rows["reference"]
    assert control["grade"].passed and not control["flagged"]  # the reference answer passes, and is never a flag


def test_probes_do_not_flag_a_strong_rubric(team, world, endpoint, django_capture_on_commit_callbacks):
    strong = rubric_task(team, world, [
        ("States the exact purchase price", 5, {"check": "regex", "pattern": r"purchase price (is|of) \$12,000,000", "flags": "i"}),
        ("Hedges between several values", -5, {"check": "contains", "value": "could be"}),
    ])
    rows = run_probes(strong, team, endpoint, django_capture_on_commit_callbacks)
    assert not [kind for kind, found in rows.items() if any(row["flagged"] for row in found)]
    assert all(row["grade"].status == GradeStatus.GRADED for found in rows.values() for row in found)


def cheats_by_kind(request):
    """The fake cheat model: for the kind the request asks for, two answers, the first mentioning 12."""
    kind = re.search(r"answers of this kind\. (\w[\w ]*?):", request.body["messages"][1]["content"]).group(1)
    return Reply(structured={"answers": [f"{kind}: roughly 12 or so.", f"{kind}: see attached."]})


def test_model_written_cheats_join_the_suite(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    env_task = rubric_task(team, world, [("Mentions the number 12", 5, {"check": "contains", "value": "12"})])
    fake_llm.responder = cheats_by_kind
    with django_capture_on_commit_callbacks(execute=False):
        run = probe_run_start(env_task=env_task, user=team.author, judge_endpoint=endpoint, cheat_endpoint=endpoint)
        assert not fake_llm.requests and run.status == ProbeRunStatus.QUEUED  # the model is asked by the job, not here
        probe_run_write_cheats(probe_run_id=run.pk)
    for grade in Grade.objects.filter(probe__run=run):
        grade_execute(grade_id=grade.pk)
    # One call per kind of cheat, each given the prompt, the rubric and the reference answer; two cheats of each kind.
    assert len(fake_llm.requests) == 5
    asked = fake_llm.requests[0].body["messages"][1]["content"]
    assert "Read the data room and state the purchase price." in asked and "(+5) Mentions the number 12" in asked and "$12,000,000" in asked
    cheats = [row for row in probe_results(run=run) if row["probe"].kind == "model_cheat"]
    assert [row["probe"].detail["aimed_at"] for row in cheats] == [
        k for k in ("hedging", "near_miss", "unsupported", "echo_criteria", "claims_done") for _ in (1, 2)
    ]
    assert [row["probe"].label for row in cheats[:2]] == ["Model-written hedge 1", "Model-written hedge 2"]
    assert [row["flagged"] for row in cheats] == [True, False] * 5
    run.refresh_from_db()
    assert (run.status, run.attempts, run.error, run.cheats_per_kind) == (ProbeRunStatus.READY, 1, "", 2)


def test_writing_the_cheats_twice_writes_them_once(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    env_task = rubric_task(team, world, [("Mentions the number 12", 5, {"check": "contains", "value": "12"})])
    fake_llm.responder = lambda request: Reply(structured={"answers": ["Roughly 12 or so."]})
    with django_capture_on_commit_callbacks(execute=False) as queued:
        run = probe_run_start(env_task=env_task, user=team.author, judge_endpoint=endpoint, cheat_endpoint=endpoint, cheats_per_kind=1)
    built = run.answers.count()
    # The built-in probes' grades and the cheat-writing job are sent once the run is committed.
    assert [c.__qualname__.split(".")[0] for c in queued] == ["grade_request"] * built + ["probe_run_start"]
    with django_capture_on_commit_callbacks(execute=False) as graded:
        probe_run_write_cheats(probe_run_id=run.pk)
        probe_run_write_cheats(probe_run_id=run.pk)  # a second message: the claim finds the run ready and does nothing
    assert len(fake_llm.requests) == 5 and len(graded) == 5
    assert list(run.answers.filter(kind="model_cheat").values_list("answer", flat=True)) == ["Roughly 12 or so."] * 5
    assert Grade.objects.filter(probe__run=run).count() == built + 5


def test_a_run_taken_over_after_its_worker_died_writes_only_the_kinds_still_missing(
    team, world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    env_task = rubric_task(team, world, [("Mentions the number 12", 5, {"check": "contains", "value": "12"})])
    fake_llm.responder = cheats_by_kind
    with django_capture_on_commit_callbacks(execute=False):
        run = probe_run_start(env_task=env_task, user=team.author, judge_endpoint=endpoint, cheat_endpoint=endpoint)
        probe_run_write_cheats(probe_run_id=run.pk)
    # As if the worker had died after saving the hedges and near misses: the rest is written again, those are not.
    run.answers.filter(kind="model_cheat").exclude(detail__aimed_at__in=["hedging", "near_miss"]).delete()
    ProbeRun.objects.filter(pk=run.pk).update(status=ProbeRunStatus.WRITING, heartbeat_at=timezone.now() - timedelta(hours=1))
    fake_llm.requests.clear()
    with django_capture_on_commit_callbacks(execute=False):
        probe_run_write_cheats(probe_run_id=run.pk)
    assert len(fake_llm.requests) == 3 and run.answers.filter(kind="model_cheat").count() == 10


def test_a_cheat_model_that_fails_fails_the_cheats_with_a_reason_and_the_rest_is_graded(team, world, endpoint, fake_llm,
                                                                                           django_capture_on_commit_callbacks):
    env_task = rubric_task(team, world, [("Mentions the number 12", 5, {"check": "contains", "value": "12"})])
    fake_llm.responder = lambda request: Reply(status=400, content="model not found")
    with django_capture_on_commit_callbacks(execute=False):
        run = probe_run_start(env_task=env_task, user=team.author, judge_endpoint=endpoint, cheat_endpoint=endpoint)
        probe_run_write_cheats(probe_run_id=run.pk)
    run.refresh_from_db()
    assert run.status == ProbeRunStatus.FAILED and run.error.startswith("The cheat-writing model failed: hedge: ")
    assert not run.answers.filter(kind="model_cheat").exists() and Grade.objects.filter(probe__run=run).count() == run.answers.count()
    requests = len(fake_llm.requests)
    probe_run_write_cheats(probe_run_id=run.pk)
    assert len(fake_llm.requests) == requests  # a failed run is not tried again


def test_a_kind_the_cheat_model_fails_is_named_and_the_others_are_kept(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    env_task = rubric_task(team, world, [("Mentions the number 12", 5, {"check": "contains", "value": "12"})])
    fake_llm.responder = lambda request: (Reply(status=400, content="no") if "Keyword echoes" in request.body["messages"][1]["content"]
                                          else cheats_by_kind(request))
    with django_capture_on_commit_callbacks(execute=False):
        run = probe_run_start(env_task=env_task, user=team.author, judge_endpoint=endpoint, cheat_endpoint=endpoint)
        probe_run_write_cheats(probe_run_id=run.pk)
    run.refresh_from_db()
    assert run.status == ProbeRunStatus.READY and run.error.startswith("Some kinds of cheat could not be written: keyword echo: ")
    assert run.answers.filter(kind="model_cheat").count() == 8


def test_a_cheat_job_lost_with_its_worker_is_sent_again(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks, eager):
    env_task = rubric_task(team, world, [("Mentions the number 12", 5, {"check": "contains", "value": "12"})])
    fake_llm.script(Reply(structured={"answers": ["Roughly 12 or so."]}))
    with django_capture_on_commit_callbacks(execute=False):
        run = probe_run_start(env_task=env_task, user=team.author, judge_endpoint=endpoint, cheat_endpoint=endpoint)
    # Its worker took it and died: the heartbeat is stale.
    ProbeRun.objects.filter(pk=run.pk).update(status=ProbeRunStatus.WRITING, attempts=1, heartbeat_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=False):
        assert probe_runs_recover(queued_for=None) == 1
    run.refresh_from_db()
    assert (run.status, run.attempts, run.answers.filter(kind="model_cheat").count()) == (ProbeRunStatus.READY, 2, 1)
    assert probe_runs_recover(queued_for=None) == 0


@pytest.fixture
def graded_batch(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    """Four trajectories with answers $12m, $12m, $15m, nothing useful; graded by checks."""
    env_task = rubric_task(team, world, [
        ("States $12m", 5, {"check": "contains", "value": "$12m"}),
        ("Says 'price'", 1, {"check": "contains", "value": "price"}),
    ])
    answers = iter(["The price is $12m.", "It is $12m.", "The price is $15m.", "No idea."])
    fake_llm.responder = lambda request: Reply(content=next(answers))
    with django_capture_on_commit_callbacks(execute=False):
        batch = rollout_services.rollout_batch_start(env_task=env_task, user=team.author, endpoint=endpoint, n=4)
    for rollout in batch.rollouts.order_by("index"):
        with django_capture_on_commit_callbacks(execute=False):
            rollout_execute(rollout_id=rollout.pk)
    for grade in Grade.objects.filter(rollout__batch=batch):
        grade_execute(grade_id=grade.pk)
    return batch


def test_difficulty_is_pass_at_k_over_the_batch(graded_batch):
    result = difficulty(batch=graded_batch)
    assert (result["n"], result["c"]) == (4, 2)
    assert dict(result["curve"]) == {1: pytest.approx(0.5), 2: pytest.approx(1 - 1 / 6), 4: 1.0}
    assert result["band"] == "learnable"


def test_expert_verdicts_give_per_criterion_confusion(graded_batch, team):
    rollouts = list(graded_batch.rollouts.order_by("index"))
    price = graded_batch.rubric_version.criteria.get(text="Says 'price'")
    expert_verdict_set(rollout=rollouts[0], criterion=price, user=team.author, met=False)  # judge: met → a false positive
    expert_verdict_set(rollout=rollouts[1], criterion=price, user=team.author, met=True)  # judge: not met → a false negative
    row = next(r for r in criterion_agreement(rubric_version=graded_batch.rubric_version) if r["criterion"] == price)
    assert (row["confusion"]["tp"], row["confusion"]["fp"], row["confusion"]["fn"], row["confusion"]["tn"]) == (1, 1, 1, 1)
    assert row["confusion"]["f1"] == pytest.approx(0.5) and row["expert_marks"] == 2


def test_ranking_agreement_and_the_low_agreement_warning(graded_batch, team):
    rollouts = list(graded_batch.rollouts.order_by("index"))
    ranking_set(batch=graded_batch, user=team.author, order=[r.pk for r in rollouts])  # the rubric agrees (ties aside)
    good = ranking_agreement(batch=graded_batch, user=team.author)
    assert good["tau"] > 0.8 and good["rho"] > 0.8 and not good["warning"]
    ranking_set(batch=graded_batch, user=team.author, order=[r.pk for r in reversed(rollouts)])
    bad = ranking_agreement(batch=graded_batch, user=team.author)
    assert bad["tau"] < 0 and "Low agreement" in bad["warning"]
    with pytest.raises(ApplicationError, match="exactly once"):
        ranking_set(batch=graded_batch, user=team.author, order=[rollouts[0].pk])


def test_failed_rollouts_count_as_not_passed(graded_batch):
    Rollout.objects.filter(batch=graded_batch, index=3).update(status=RolloutStatus.FAILED)
    assert difficulty(batch=graded_batch)["n"] == 4


def test_outsiders_cannot_judge(graded_batch, other_team):
    from django.http import Http404

    with pytest.raises(Http404):
        ranking_set(batch=graded_batch, user=other_team.author, order=[])


def test_a_reviewer_may_judge_but_the_criterion_must_be_this_tasks(graded_batch, team, world):
    other = factories.env_task(world, team.author, title="Other")
    with pytest.raises(ApplicationError, match="another task"):
        expert_verdict_set(
            rollout=graded_batch.rollouts.first(), criterion=other.rubric_versions.get().criteria.first(), user=team.reviewer, met=True
        )


def test_the_cheat_job_runs_on_the_grading_queue():
    from config.celery import app
    from verification.tasks import probe_run_write_cheats

    assert app.amqp.router.route({}, probe_run_write_cheats.name, (1,), {})["queue"].name == "grading"
