import json
from datetime import timedelta

import pytest
from django.utils import timezone

from authoring import services as authoring_services
from authoring.models import RubricVersion
from rollouts import services as rollout_services
from rollouts.agent import rollout_execute
from rollouts.grading.services import batch_regrade, grade_execute, grade_request
from rollouts.models import Grade, GradeStatus, ProbeAnswer, ProbeRun
from tests import factories
from tests.fake_llm import Reply


def judge_by_keyword(request) -> Reply:
    """The fake judge says 'met' when the criterion's key word appears in the answer."""
    content = request.body["messages"][1]["content"]
    answer = content.split("# The agent's final answer\n", 1)[1].split("\n\n#", 1)[0]
    criterion = content.rsplit("\n", 1)[1]
    word = criterion.split()[-1].strip(".").lower()
    return Reply(structured={"explanation": f"Looked for {word!r}.", "criteria_met": word in answer.lower()})


@pytest.fixture
def task(team, world):
    env_task = factories.env_task(world, team.author, criteria=0)
    rubric = env_task.rubric_versions.get()
    for text, points, tag in [
        ("States the price", 5, "essential"),
        ("Names the buyer", 3, "important"),
        ("Mentions hedging", -4, "pitfall"),
    ]:
        authoring_services.criterion_add(
            env_task=env_task, user=team.author, base_revision=rubric.revision, text=text, points=points, tag=tag
        )
        rubric.refresh_from_db()
    return env_task


def probe_grade(task, answer: str, endpoint) -> Grade:
    rubric = task.rubric_versions.order_by("-number").first()
    run = ProbeRun.objects.create(env_task=task, rubric_version=rubric)
    probe = ProbeAnswer.objects.create(run=run, kind="test", label="test", answer=answer)
    grade = grade_request(rubric_version=rubric, judge_endpoint=endpoint, probe=probe)
    grade_execute(grade_id=grade.pk)
    grade.refresh_from_db()
    return grade


def test_each_criterion_is_judged_alone_and_scored_healthbench_style(task, endpoint, fake_llm):
    fake_llm.responder = judge_by_keyword
    grade = probe_grade(task, "The price is $12m; the buyer is Acme. Some hedging here.", endpoint)
    assert grade.status == GradeStatus.GRADED
    assert [v.met for v in grade.verdicts.order_by("criterion__position")] == [True, True, True]
    assert (grade.met_points, grade.positive_points) == (4, 8) and grade.score == pytest.approx(0.5) and grade.passed is False
    assert len(fake_llm.requests) == 3
    assert "undesirable behaviour (negative points)" in fake_llm.requests[2].body["messages"][1]["content"]
    assert grade.per_tag["essential"]["score"] == 1.0 and grade.per_tag["pitfall"]["score"] is None


def test_score_is_clipped_and_the_threshold_decides(task, endpoint, fake_llm):
    fake_llm.responder = judge_by_keyword
    assert probe_grade(task, "Only hedging.", endpoint).score == 0.0  # -4 / 8 clipped to 0
    passed = probe_grade(task, "The price, and the buyer.", endpoint)
    assert passed.score == 1.0 and passed.passed is True


def test_all_must_pass_mode(task, team, endpoint, fake_llm):
    RubricVersion.objects.filter(env_task=task).update(all_must_pass=True, pass_threshold=0.1)
    fake_llm.responder = judge_by_keyword
    assert probe_grade(task, "The price only.", endpoint).passed is False
    assert probe_grade(task, "The price and the buyer.", endpoint).passed is True


def test_k_samples_majority_and_disagreement(task, endpoint, fake_llm):
    RubricVersion.objects.filter(env_task=task).update(judge_samples=3)
    votes = iter([True, False, True] * 3)
    fake_llm.responder = lambda request: Reply(structured={"explanation": "vote", "criteria_met": next(votes)})
    grade = probe_grade(task, "anything", endpoint)
    verdict = grade.verdicts.order_by("criterion__position").first()
    assert verdict.met is True and len(verdict.samples) == 3 and verdict.disagreement == pytest.approx(1 / 3)
    assert len(fake_llm.requests) == 9


def test_a_malformed_judge_answer_fails_the_grade_and_is_never_met(task, endpoint, fake_llm):
    fake_llm.responder = lambda request: Reply(content="I think it is met!")
    grade = probe_grade(task, "The price and the buyer.", endpoint)
    assert grade.status == GradeStatus.FAILED and grade.score is None and grade.passed is None
    assert "not valid JSON. Gave up after 4 attempts" in grade.error
    assert not grade.verdicts.filter(met=True).exists()


def test_grading_twice_changes_nothing(task, endpoint, fake_llm):
    fake_llm.responder = judge_by_keyword
    grade = probe_grade(task, "price", endpoint)
    calls = len(fake_llm.requests)
    grade_execute(grade_id=grade.pk)
    assert len(fake_llm.requests) == calls and grade.verdicts.count() == 3


@pytest.mark.parametrize(("config", "answer", "met"), [
    ({"check": "contains", "value": "$12m"}, "It is $12M.", True),
    ({"check": "contains", "value": "$12m", "case_sensitive": True}, "It is $12M.", False),
    ({"check": "not_contains", "value": "probably"}, "Probably $12m.", False),
    ({"check": "regex", "pattern": r"\$1[0-9]m", "flags": "i"}, "It is $12M.", True),
    ({"check": "exact", "value": "twelve million"}, "  Twelve   million ", True),
    ({"check": "numeric", "value": 12000000, "tolerance": 0.01, "relative": True}, "About $12.05 million in cash.", True),
    ({"check": "numeric", "value": 12000000, "tolerance": 1000}, "About $12.5m.", False),
    ({"check": "numeric", "value": 35, "tolerance": 0.5}, "A 35% stake.", True),
])
def test_deterministic_checks(team, world, endpoint, fake_llm, config, answer, met):
    env_task = factories.env_task(world, team.author, criteria=0)
    rubric = env_task.rubric_versions.get()
    authoring_services.criterion_add(
        env_task=env_task,
        user=team.author,
        base_revision=rubric.revision,
        text="check",
        points=1,
        grader_kind="check",
        grader_config=config,
    )
    grade = probe_grade(env_task, answer, endpoint)
    assert grade.verdicts.get().met is met and fake_llm.requests == []


def test_a_broken_check_fails_the_grade(team, world, endpoint):
    env_task = factories.env_task(world, team.author, criteria=0)
    rubric = env_task.rubric_versions.get()
    authoring_services.criterion_add(
        env_task=env_task,
        user=team.author,
        base_revision=rubric.revision,
        text="x",
        points=1,
        grader_kind="check",
        grader_config={"check": "regex", "pattern": "("},
    )
    grade = probe_grade(env_task, "x", endpoint)
    assert grade.status == GradeStatus.FAILED and "regular expression is invalid" in grade.error


def test_overlay_checks_see_what_the_agent_wrote_and_sent(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    env_task = factories.env_task(world, team.author, criteria=0)
    rubric = env_task.rubric_versions.get()
    checks = [
        {"check": "file_exists", "path": "Work/Memo.md"},
        {"check": "file_contains", "path": "Work/Memo.md", "value": "change of control"},
        {"check": "xlsx_cell", "path": "Work/Model.xlsx", "cell": "B3", "value": 30, "tolerance": 0.001},
        {"check": "email_sent", "to": "client@example.com", "subject_contains": "memo"},
        {"check": "file_exists", "path": "Deal/Doc 1.md"},  # in the world, not written by the agent
    ]
    for i, config in enumerate(checks):
        authoring_services.criterion_add(
            env_task=env_task,
            user=team.author,
            base_revision=rubric.revision + i,
            text=f"check {i}",
            points=1,
            grader_kind="check",
            grader_config=config,
        )
    sheet = "## Sheet: Model\n|   | A | B |\n|---|---|---|\n| 1 | a | 10 |\n| 2 | b | 20 |\n| 3 | total | =SUM(B1:B2) |\n"
    fake_llm.script(
        Reply(content=None, tool_calls=[
            {"name": "write_file", "arguments": {"path": "Work/Memo.md", "content": "# Memo\n\nThe change of control clause…"}},
            {"name": "write_file", "arguments": {"path": "Work/Model.xlsx", "content": sheet}},
            {"name": "send_email", "arguments": {"to": ["client@example.com"], "subject": "The memo", "body": "Attached."}},
        ]),
        Reply(content="Done."),
    )
    with django_capture_on_commit_callbacks(execute=False):
        batch = rollout_services.rollout_batch_start(env_task=env_task, user=team.author, endpoint=endpoint, n=1)
    rollout = batch.rollouts.get()
    with django_capture_on_commit_callbacks(execute=False):
        rollout_execute(rollout_id=rollout.pk)
    grade = Grade.objects.get(rollout=rollout)  # queued automatically when the rollout completed
    grade_execute(grade_id=grade.pk)
    grade.refresh_from_db()
    results = [v.met for v in grade.verdicts.order_by("criterion__position")]
    assert results == [True, True, True, True, False], [v.rationale for v in grade.verdicts.order_by("criterion__position")]


def test_regrade_after_a_rubric_edit_keeps_the_old_grades(task, team, endpoint, fake_llm, django_capture_on_commit_callbacks):
    fake_llm.responder = lambda request: (
        judge_by_keyword(request)
        if "criteria_met" in json.dumps(request.body.get("response_format", {}))
        else Reply(content="The price is $12m.")
    )
    with django_capture_on_commit_callbacks(execute=False):
        batch = rollout_services.rollout_batch_start(env_task=task, user=team.author, endpoint=endpoint, n=2)
    for rollout in batch.rollouts.all():
        with django_capture_on_commit_callbacks(execute=False):
            rollout_execute(rollout_id=rollout.pk)
    for grade in Grade.objects.all():
        grade_execute(grade_id=grade.pk)
    old = {g.rollout_id: g.score for g in Grade.objects.all()}
    assert list(old.values()) == [pytest.approx(5 / 8)] * 2
    v1 = task.rubric_versions.get()
    criterion = v1.criteria.get(text="Names the buyer")
    authoring_services.criterion_update(
        criterion=criterion, user=team.author, base_revision=v1.revision, text="States the price", points=3, tag="important"
    )
    v2 = task.rubric_versions.get(number=2)
    with django_capture_on_commit_callbacks(execute=False):
        grades = batch_regrade(batch=batch, user=team.author, rubric_version=v2)
    for grade in grades:
        grade_execute(grade_id=grade.pk)
    assert {g.score for g in Grade.objects.filter(rubric_version=v2)} == {1.0}
    assert {g.rollout_id: g.score for g in Grade.objects.filter(rubric_version=v1)} == old
    assert v1.criteria.get(position=2).text == "Names the buyer"  # the graded version never changed


def test_a_grade_whose_worker_keeps_dying_fails_with_a_reason(task, endpoint, fake_llm):
    """Each delivery after a killed worker (its heartbeat went stale) claims the grade again;
    once it is out of attempts it ends, failed with a reason, instead of showing 'Grading'
    for ever."""
    fake_llm.responder = judge_by_keyword
    rubric = task.rubric_versions.order_by("-number").first()
    run = ProbeRun.objects.create(env_task=task, rubric_version=rubric)
    grade = grade_request(
        rubric_version=rubric, judge_endpoint=endpoint, probe=ProbeAnswer.objects.create(run=run, kind="test", label="t", answer="x")
    )
    dead = timezone.now() - timedelta(hours=1)
    Grade.objects.filter(pk=grade.pk).update(status=GradeStatus.RUNNING, attempts=2, heartbeat_at=dead)  # two deliveries died
    grade_execute(grade_id=grade.pk)  # the third runs it through
    grade.refresh_from_db()
    assert (grade.status, grade.attempts) == (GradeStatus.GRADED, 3)
    assert timezone.now() - grade.heartbeat_at < timedelta(minutes=1)  # the claim's sign of life

    # The third died too, after it ran (its worker beat it after the claim): only attempts that ran count.
    Grade.objects.filter(pk=grade.pk).update(status=GradeStatus.RUNNING, graded_at=None, started_at=dead - timedelta(minutes=1),
                                             heartbeat_at=dead)
    requests = len(fake_llm.requests)
    grade_execute(grade_id=grade.pk)
    grade.refresh_from_db()
    assert grade.status == GradeStatus.FAILED and grade.error == "The grading worker was interrupted too many times."
    assert grade.graded_at is not None and len(fake_llm.requests) == requests
    grade_execute(grade_id=grade.pk)  # a late duplicate of a failed grade does nothing
    assert Grade.objects.get(pk=grade.pk).status == GradeStatus.FAILED


def test_a_second_message_for_a_running_grade_leaves_it_alone_while_its_worker_is_alive(task, endpoint, fake_llm, settings):
    """A recovery may send one more message for a grade that was only waiting in a long
    queue: while the first delivery's worker beats its heartbeat, the second does nothing,
    however long the grade has been running; once the beats stop, it takes over."""
    fake_llm.responder = judge_by_keyword
    rubric = task.rubric_versions.order_by("-number").first()
    run = ProbeRun.objects.create(env_task=task, rubric_version=rubric)
    grade = grade_request(
        rubric_version=rubric,
        judge_endpoint=endpoint,
        probe=ProbeAnswer.objects.create(run=run, kind="test", label="t", answer="The price."),
    )
    now = timezone.now()
    fresh = now - timedelta(seconds=settings.JOB_STALE_SECONDS - 5)
    Grade.objects.filter(pk=grade.pk).update(
        status=GradeStatus.RUNNING, attempts=1, started_at=now - timedelta(hours=2), heartbeat_at=fresh
    )
    grade_execute(grade_id=grade.pk)
    assert (Grade.objects.get(pk=grade.pk).status, len(fake_llm.requests)) == (GradeStatus.RUNNING, 0)
    Grade.objects.filter(pk=grade.pk).update(heartbeat_at=now - timedelta(seconds=settings.JOB_STALE_SECONDS + 5))
    grade_execute(grade_id=grade.pk)
    grade.refresh_from_db()
    assert (grade.status, grade.attempts) == (GradeStatus.GRADED, 2)


def test_grades_whose_message_was_lost_are_sent_again_once(task, endpoint, fake_llm, django_capture_on_commit_callbacks, eager):
    from rollouts.grading.services import grades_recover

    fake_llm.responder = judge_by_keyword
    rubric = task.rubric_versions.order_by("-number").first()
    run = ProbeRun.objects.create(env_task=task, rubric_version=rubric)
    with django_capture_on_commit_callbacks(execute=False):  # the messages are lost
        lost, died, fresh, busy = (
            grade_request(
                rubric_version=rubric,
                judge_endpoint=endpoint,
                probe=ProbeAnswer.objects.create(run=run, kind="test", label=f"{i}", answer="The price."),
            )
            for i in range(4)
        )
    hour_ago = timezone.now() - timedelta(hours=1)
    Grade.objects.filter(pk__in=[lost.pk, died.pk, busy.pk]).update(created_at=hour_ago)
    Grade.objects.filter(pk=died.pk).update(
        status=GradeStatus.RUNNING, attempts=1, started_at=hour_ago, heartbeat_at=hour_ago
    )  # its worker died an hour ago
    Grade.objects.filter(pk=busy.pk).update(
        status=GradeStatus.RUNNING, attempts=1, started_at=hour_ago, heartbeat_at=timezone.now()
    )  # alive: left alone
    assert grades_recover() == 2  # sent again and, eagerly, run
    assert {g.pk: g.status for g in Grade.objects.all()} == {
        lost.pk: GradeStatus.GRADED, died.pk: GradeStatus.GRADED, fresh.pk: GradeStatus.QUEUED, busy.pk: GradeStatus.RUNNING,
    }
    judged = len(fake_llm.requests)
    for grade in (lost, died):  # a second delivery of either changes nothing
        grade_execute(grade_id=grade.pk)
    assert len(fake_llm.requests) == judged == 2 * 3
