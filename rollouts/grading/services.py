"""Grading writes. A grade is claimed by a conditional update, verdicts are saved one by
one under a unique (grade, criterion), so a re-run resumes and never duplicates; a
verdict that could not be reached (a malformed judge answer after retries, a broken
check) fails the grade — it is never counted as met."""

import contextlib
import logging
from datetime import timedelta

from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import User
from accounts.selectors import membership_get
from accounts.services import require_role
from authoring.models import Criterion, GraderKind, RubricVersion
from authoring.services import rubric_version_freeze
from core.exceptions import ApplicationError
from core.jobs import Deadline, JobStates, claim_job, kept_alive, stale
from llm.errors import ModelError
from llm.models import ModelEndpoint
from rollouts.constants import GRADE_TIME_LIMIT
from rollouts.grading.attempt import Attempt, attempt_of_rollout
from rollouts.grading.checks import run_check
from rollouts.grading.judge import SEES, judge
from rollouts.grading.scoring import score
from rollouts.models import GRADE_UNSCORED, Grade, GradeStatus, ProbeAnswer, Rollout, RolloutBatch, RolloutStatus, Verdict
from rollouts.tasks import grade_attempt

logger = logging.getLogger(__name__)
MAX_ATTEMPTS = 3
GRADE_STATES = JobStates(queued=GradeStatus.QUEUED, running=GradeStatus.RUNNING, failed=GradeStatus.FAILED, ended_at="graded_at")
# Celery's thread pool does not enforce the task's time limit: the worker's pulse ends a grade
# still running this long after its claim (core.jobs), whatever its thread waits on.
GRADE_DEADLINE = Deadline(timedelta(seconds=GRADE_TIME_LIMIT), f"Grading stopped after {GRADE_TIME_LIMIT // 60} minutes (it hung).")


def _enqueue(grade_ids: list[int]) -> None:
    for grade_id in grade_ids:
        grade_attempt.delay(grade_id)


def grade_request(*, rubric_version: RubricVersion, judge_endpoint: ModelEndpoint | None, rollout: Rollout | None = None,
                  probe: ProbeAnswer | None = None) -> Grade:
    """The grade of this attempt under this rubric version, queued once."""
    key = {"rollout": rollout} if rollout is not None else {"probe": probe}
    with transaction.atomic():
        grade, created = Grade.objects.get_or_create(
            rubric_version=rubric_version, **key,
            defaults={"judge_endpoint": judge_endpoint, "judge_endpoint_name": judge_endpoint.name if judge_endpoint else ""},
        )
        if created:
            transaction.on_commit(lambda: _enqueue([grade.pk]))
    return grade


def grades_recover(*, queued_for: timedelta | None = timedelta(minutes=1)) -> int:
    """Send again the grades whose broker message may be lost (see draft_jobs_recover):
    queued for a while, or still running with a stale heartbeat (its worker died; the
    filesystem broker never redelivers). The claim makes a second message harmless."""
    now = timezone.now()
    lost = stale(GRADE_STATES)
    if queued_for is not None:  # (None: only the running ones, see draft_jobs_recover)
        lost |= Q(status=GradeStatus.QUEUED, created_at__lt=now - queued_for)
    ids = list(Grade.objects.filter(lost).values_list("pk", flat=True))
    _enqueue(ids)
    return len(ids)


def grade_execute(*, grade_id: int) -> None:
    """Grade one attempt. Safe to run twice; a worker killed mid-grade leaves the grade
    running with a heartbeat that goes stale, and the next message for it re-claims it then
    (up to MAX_ATTEMPTS; core.jobs), keeping the verdicts already saved."""
    if not claim_job(
        Grade, grade_id, states=GRADE_STATES, max_attempts=MAX_ATTEMPTS, gave_up="The grading worker was interrupted too many times."
    ):
        return
    with kept_alive(Grade, grade_id, states=GRADE_STATES, deadline=GRADE_DEADLINE):
        _grade(grade_id)


def _grade(grade_id: int) -> None:
    grade = Grade.objects.select_related(
        "rubric_version", "judge_endpoint", "rollout__batch__env_task__world", "rollout__overlay", "probe__run"
    ).get(pk=grade_id)
    rubric = grade.rubric_version
    rubric_version_freeze(rubric_version=rubric)  # it has graded something: immutable from now on
    try:
        attempt, project_id = _attempt(grade)
        done = set(grade.verdicts.values_list("criterion_id", flat=True))
        for criterion in rubric.criteria.all():
            if criterion.pk not in done:
                if not Grade.objects.filter(pk=grade_id, status=GradeStatus.RUNNING).exists():
                    return  # cancelled (grades_cancel): no more judge calls; the verdicts reached are kept
                _verdict(grade, criterion, attempt, project_id, rubric.judge_samples)
    except (OperationalError, InterfaceError):
        raise  # the database went away (restarting): the task retries; kept_alive lets the grade go
    except Exception as error:
        logger.exception("grade %s failed", grade_id)
        Grade.objects.filter(pk=grade_id, status=GradeStatus.RUNNING).update(
            status=GradeStatus.FAILED, error=f"Internal error ({type(error).__name__}).", graded_at=timezone.now()
        )
        return
    verdicts = list(grade.verdicts.select_related("criterion"))
    failed = [v for v in verdicts if v.met is None]
    if failed:
        # Named by the number the author sees (1..n, as the rubric lists them), not the stored position.
        numbers = {pk: n for n, pk in enumerate(rubric.criteria.values_list("pk", flat=True), start=1)}
        failed.sort(key=lambda v: numbers.get(v.criterion_id, 0))
        reasons = "; ".join(f"criterion {numbers.get(v.criterion_id, '?')}: {v.error}" for v in failed[:5])
        Grade.objects.filter(pk=grade_id, status=GradeStatus.RUNNING).update(
            status=GradeStatus.FAILED, score=None, passed=None, error=reasons[:2000], graded_at=timezone.now()
        )
        return
    result = score(
        [(v.criterion.points, v.criterion.tag, v.met) for v in verdicts],
        threshold=rubric.pass_threshold,
        all_must_pass=rubric.all_must_pass,
    )
    Grade.objects.filter(pk=grade_id, status=GradeStatus.RUNNING).update(
        status=GradeStatus.GRADED, score=result.score, passed=result.passed, met_points=result.met_points,
        positive_points=result.positive_points, per_tag=result.per_tag, error="", graded_at=timezone.now(),
    )


def _attempt(grade: Grade) -> tuple[Attempt, int]:
    if grade.rollout_id:
        return attempt_of_rollout(grade.rollout), grade.rollout.batch.project_id
    run = grade.probe.run
    return Attempt(prompt=run.env_task.prompt, answer=grade.probe.answer), run.env_task.project_id


def _verdict(grade: Grade, criterion, attempt: Attempt, project_id: int, samples: int) -> None:
    fields: dict = {}
    try:
        if criterion.grader_kind == GraderKind.CHECK:
            met, rationale = run_check(criterion.grader_config, attempt)
            fields = {"met": met, "rationale": rationale}
        else:
            if grade.judge_endpoint is None:
                raise ApplicationError("No judge model is set for this grade.")
            sees = [s for s in criterion.grader_config.get("sees", ["answer"]) if s in SEES] or ["answer"]
            outcome = judge(endpoint=grade.judge_endpoint, criterion_text=criterion.text, points=criterion.points, attempt=attempt,
                            sees=sees, samples=samples, project_id=project_id)
            fields = {"met": outcome.met, "rationale": outcome.rationale, "samples": outcome.samples, "disagreement": outcome.disagreement}
    except (ModelError, ApplicationError) as error:
        fields = {"met": None, "error": error.message[:2000]}
    with contextlib.suppress(IntegrityError), transaction.atomic():  # another run of this grade saved it first
        Verdict.objects.create(grade=grade, criterion=criterion, **fields)


def grades_cancel(*, grades) -> int:
    """Cancel the grades of `grades` (a queryset) not graded yet: a queued one never starts, a
    running one stops before its next criterion (its worker checks; the verdicts it reached
    are kept). A cancelled grade counts as neither met nor an attempt, like a failed one, and
    Retry resumes it. For the services that check who may cancel."""
    return grades.filter(status__in=(GradeStatus.QUEUED, GradeStatus.RUNNING)).update(
        status=GradeStatus.CANCELLED, error="", score=None, passed=None, graded_at=timezone.now()
    )


def batch_grading_cancel(*, batch: RolloutBatch, user: User, rubric_version: RubricVersion) -> int:
    """Cancel the grading of the batch's rollouts under `rubric_version` (a regrade, say)."""
    require_role(membership_get(user=user, project_id=batch.project_id), "author")
    if rubric_version.env_task_id != batch.env_task_id:
        raise ApplicationError("That rubric belongs to another task.")
    cancelled = grades_cancel(grades=Grade.objects.filter(rollout__batch=batch, rubric_version=rubric_version))
    if not cancelled:
        raise ApplicationError("Every grade of this rubric version is in already: there is nothing to cancel.")
    return cancelled


def rollout_graded(*, rollout: Rollout, has_criteria: bool | None = None) -> Grade | None:
    """Queue the grade of a finished rollout against its batch's rubric version. A caller
    that knows whether that (frozen) version has criteria says so in `has_criteria`."""
    batch = rollout.batch
    if rollout.status != RolloutStatus.COMPLETED:
        return None
    if has_criteria is None:
        has_criteria = Criterion.objects.filter(rubric_version_id=batch.rubric_version_id).exists()
    if not has_criteria:
        return None  # (by id: a batch without criteria, the common case in a trial run, loads nothing more)
    return grade_request(rubric_version=batch.rubric_version, judge_endpoint=batch.judge_endpoint or batch.endpoint, rollout=rollout)


def batch_regrade(
    *, batch: RolloutBatch, user: User, rubric_version: RubricVersion | None = None, judge_endpoint: ModelEndpoint | None = None
) -> list[Grade]:
    """Grade every completed rollout of the batch against a (newer) rubric version; the
    grades of that version that failed or were cancelled are tried again, the others kept."""
    require_role(membership_get(user=user, project_id=batch.project_id), "author")
    rubric = rubric_version or batch.env_task.rubric_versions.order_by("-number").first()
    if rubric.env_task_id != batch.env_task_id:
        raise ApplicationError("That rubric belongs to another task.")
    if not rubric.criteria.exists():
        raise ApplicationError("This rubric version has no criteria.")
    endpoint = judge_endpoint or batch.judge_endpoint or batch.endpoint
    grades = [
        grade_request(rubric_version=rubric, judge_endpoint=endpoint, rollout=rollout)
        for rollout in batch.rollouts.filter(status=RolloutStatus.COMPLETED)
    ]
    # A grade of this version that failed (or was cancelled) is tried again: kept, it would say nothing new.
    retried = set(_grades_retry(grade_ids=[g.pk for g in grades if g.status in GRADE_UNSCORED], judge_endpoint=endpoint))
    for grade in grades:
        if grade.pk in retried:
            grade.status = GradeStatus.QUEUED
    return grades


def batch_failed_grades_retry(*, batch: RolloutBatch, user: User, rubric_version: RubricVersion | None = None) -> list[Grade]:
    """Send again every failed or cancelled grade of the batch's rollouts (under
    `rubric_version`, or under any version): the verdicts it reached are kept, the failed
    ones asked again, the ones a cancel never reached asked for the first time."""
    require_role(membership_get(user=user, project_id=batch.project_id), "author")
    if rubric_version is not None and rubric_version.env_task_id != batch.env_task_id:
        raise ApplicationError("That rubric belongs to another task.")
    unscored = Grade.objects.filter(rollout__batch=batch, status__in=GRADE_UNSCORED)
    if rubric_version is not None:
        unscored = unscored.filter(rubric_version=rubric_version)
    retried = _grades_retry(grade_ids=list(unscored.values_list("pk", flat=True)), judge_endpoint=None,
                            default_endpoint=batch.judge_endpoint or batch.endpoint)
    return list(Grade.objects.filter(pk__in=retried).select_related("rubric_version").order_by("rollout__index", "rubric_version__number"))


def _grades_retry(
    *, grade_ids: list[int], judge_endpoint: ModelEndpoint | None, default_endpoint: ModelEndpoint | None = None
) -> list[int]:
    """Queue failed or cancelled grades again, from the start of their attempts: their
    failed verdicts are dropped (the reached ones stay, as a resumed grade keeps them). With
    `judge_endpoint` they are judged by it; else by their own, or `default_endpoint` when
    theirs was deleted. Returns the ids queued (a grade no longer failed nor cancelled is
    left alone)."""
    if not grade_ids:
        return []
    with transaction.atomic():
        ids = list(Grade.objects.select_for_update().filter(pk__in=grade_ids, status__in=GRADE_UNSCORED).values_list("pk", flat=True))
        Verdict.objects.filter(grade_id__in=ids, met__isnull=True).delete()
        reset = {"status": GradeStatus.QUEUED, "error": "", "score": None, "passed": None, "attempts": 0, "started_at": None,
                 "heartbeat_at": None, "graded_at": None}
        if judge_endpoint is not None:
            reset |= {"judge_endpoint": judge_endpoint, "judge_endpoint_name": judge_endpoint.name}
        elif default_endpoint is not None:
            Grade.objects.filter(pk__in=ids, judge_endpoint__isnull=True).update(
                judge_endpoint=default_endpoint, judge_endpoint_name=default_endpoint.name
            )
        Grade.objects.filter(pk__in=ids).update(**reset)
        transaction.on_commit(lambda: _enqueue(ids))
    return ids
