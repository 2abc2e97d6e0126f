from django.db.models import (
    Case,
    CharField,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.shortcuts import get_object_or_404

from accounts.models import User
from accounts.selectors import project_list_for_user
from rollouts.models import ExpertVerdict, Grade, Rollout, RolloutBatch, RolloutStatus, Step, StepComment, Verdict


def _projects(user: User):
    return project_list_for_user(user=user).values("pk")


def batch_list_for_task(*, user: User, env_task) -> QuerySet[RolloutBatch]:
    return RolloutBatch.objects.filter(env_task=env_task, project_id__in=_projects(user)).select_related("rubric_version")


def batch_get_for_user(*, user: User, pk: int) -> RolloutBatch:
    return get_object_or_404(
        RolloutBatch.objects.filter(project_id__in=_projects(user)).select_related("env_task", "env_task__world", "rubric_version"), pk=pk
    )


def rollout_get_for_user(*, user: User, pk: int) -> Rollout:
    return get_object_or_404(
        Rollout.objects.filter(batch__project_id__in=_projects(user)).select_related(
            "batch", "batch__env_task", "batch__env_task__world", "overlay"
        ),
        pk=pk,
    )


def step_get_for_user(*, user: User, pk: int) -> Step:
    return get_object_or_404(
        Step.objects.filter(rollout__batch__project_id__in=_projects(user)).select_related("rollout", "rollout__batch"), pk=pk
    )


def rollout_steps(*, rollout: Rollout) -> QuerySet[Step]:
    # (the raw answers are read one step at a time, when the author opens a step's request and response)
    return (
        rollout.steps.order_by("index")
        .defer("raw_response")
        .prefetch_related(Prefetch("comments", queryset=StepComment.objects.select_related("author")))
    )


def batch_progress(*, batch: RolloutBatch) -> dict:
    counts = batch.rollouts.aggregate(
        total=Count("id"), **{status: Count("id", filter=Q(status=status)) for status in RolloutStatus.values},
    )
    # Summed over the saved steps, not the rollouts' totals: a running rollout writes its own
    # every few seconds (agent._Pulse), its steps as they happen.
    counts |= Step.objects.filter(rollout__batch=batch).aggregate(
        input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"), cost=Sum("cost"),
    )
    finished = counts["completed"] + counts["failed"] + counts["cancelled"]
    counts["finished"] = finished
    counts["percent"] = int(100 * finished / counts["total"]) if counts["total"] else 100
    counts["is_finished"] = finished == counts["total"]
    counts["cancel"] = _cancel_summary(batch) if batch.cancelled_at else None
    return counts


def _cancel_summary(batch: RolloutBatch) -> dict:
    """How a cancelled batch's rollouts ended around the cancel: finished before it, ended
    after it (they were running: stopped at their next step, or finished that step), and
    never started."""
    ended = (RolloutStatus.COMPLETED, RolloutStatus.FAILED, RolloutStatus.CANCELLED)
    return batch.rollouts.aggregate(
        before=Count("id", filter=Q(status__in=ended, finished_at__lte=batch.cancelled_at, started_at__isnull=False)),
        after=Count("id", filter=Q(status__in=ended, finished_at__gt=batch.cancelled_at, started_at__isnull=False)),
        never_started=Count("id", filter=Q(status=RolloutStatus.CANCELLED, started_at__isnull=True)),
        still_running=Count("id", filter=Q(status__in=(RolloutStatus.QUEUED, RolloutStatus.RUNNING))),
    )


def batch_rollouts(*, batch: RolloutBatch) -> QuerySet[Rollout]:
    return batch.rollouts.annotate(step_count=Count("steps")).order_by("index")


def batch_rollouts_listed(*, batch: RolloutBatch) -> QuerySet[Rollout]:
    """batch_rollouts with what the batch page sorts and filters by: the newest rubric
    version's grade (`grade_score`, `grade_result` "passed"/"failed" once graded) and
    `duration` (finished minus started). Still one query."""
    newest = Grade.objects.filter(rollout__batch=batch).order_by("-rubric_version__number").values("rubric_version__number")[:1]
    graded = Grade.objects.filter(rollout=OuterRef("pk"), rubric_version__number=Subquery(newest), status="graded")
    result = graded.annotate(
        result=Case(When(passed=True, then=Value("passed")), default=Value("failed"), output_field=CharField())
    ).values("result")[:1]
    return batch_rollouts(batch=batch).annotate(
        grade_score=Subquery(graded.values("score")[:1]),
        grade_result=Subquery(result, output_field=CharField()),
        duration=ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField()),
    )


def batch_latest_grades(*, batch: RolloutBatch) -> tuple[int | None, dict[int, dict]]:
    """The grades of the newest rubric version that graded the batch (a regrade makes the
    new version the one shown, as on the quality page): its number, and {rollout id:
    {status, score, passed}}. One query, polled with the batch page."""
    grades = Grade.objects.filter(rollout__batch=batch)
    newest = grades.order_by("-rubric_version__number").values("rubric_version__number")[:1]
    rows = list(
        grades.filter(rubric_version__number=Subquery(newest)).values("rollout_id", "rubric_version__number", "status", "score", "passed")
    )
    return (rows[0]["rubric_version__number"] if rows else None), {row["rollout_id"]: row for row in rows}


def rollout_expert_verdicts(*, rollout: Rollout, grade: Grade | None) -> list[ExpertVerdict]:
    """The experts' own calls on this rollout's criteria under the grade's rubric version."""
    if grade is None:
        return []
    return list(ExpertVerdict.objects.filter(rollout=rollout, criterion__rubric_version_id=grade.rubric_version_id)
                .select_related("expert").order_by("expert__username"))


def rollout_latest_grade(*, rollout: Rollout) -> Grade | None:
    """The rollout's grade under the newest rubric version that graded it, with its verdicts
    and their criteria (in the rubric's order)."""
    verdicts = Prefetch("verdicts", queryset=Verdict.objects.select_related("criterion"))
    return (rollout.grades.select_related("rubric_version").prefetch_related(verdicts)
            .order_by("-rubric_version__number").first())
