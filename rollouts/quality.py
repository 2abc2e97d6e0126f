"""How far the verifier can be trusted: judge vs expert verdicts, rubric vs expert
ranking, judge stability, and difficulty (pass@k)."""

import math

from django.db import transaction
from django.db.models import F

from accounts.selectors import membership_get
from authoring.models import Criterion, RubricVersion
from core.exceptions import ApplicationError
from rollouts import metrics
from rollouts.models import ExpertVerdict, Grade, GradeStatus, Ranking, Rollout, RolloutBatch, RolloutStatus, Verdict

LOW_AGREEMENT = 0.3
KS = (1, 2, 4, 8, 16)


def _expert(user, project_id: int) -> None:
    membership = membership_get(user=user, project_id=project_id)
    if not (membership.can_author or membership.can_review):
        raise ApplicationError("Your role cannot judge trajectories.")


@transaction.atomic
def expert_verdict_set(*, rollout: Rollout, criterion: Criterion, user, met: bool | None, note: str = "") -> ExpertVerdict | None:
    """The expert's call on one criterion of one trajectory (None clears it)."""
    _expert(user, rollout.batch.project_id)
    if criterion.rubric_version.env_task_id != rollout.batch.env_task_id:
        raise ApplicationError("That criterion belongs to another task.")
    if met is None:
        ExpertVerdict.objects.filter(rollout=rollout, criterion=criterion, expert=user).delete()
        return None
    verdict, _ = ExpertVerdict.objects.update_or_create(rollout=rollout, criterion=criterion, expert=user, defaults={"met": met, "note": note[:2000]})
    return verdict


@transaction.atomic
def ranking_set(*, batch: RolloutBatch, user, order: list[int]) -> Ranking:
    """The expert's order of the batch's completed trajectories, best first."""
    _expert(user, batch.project_id)
    completed = set(batch.rollouts.filter(status=RolloutStatus.COMPLETED).values_list("pk", flat=True))
    order = [int(pk) for pk in order]
    if set(order) != completed or len(order) != len(completed):
        raise ApplicationError("Rank every completed trajectory of this batch exactly once.")
    ranking, _ = Ranking.objects.update_or_create(batch=batch, expert=user, defaults={"order": order})
    return ranking


def criterion_agreement(*, rubric_version: RubricVersion) -> list[dict]:
    """Per criterion: judge vs expert confusion counts, precision, recall, F1, and how often
    the judge's own samples disagree."""
    verdicts = Verdict.objects.filter(grade__rubric_version=rubric_version, grade__status=GradeStatus.GRADED, grade__rollout__isnull=False).values(
        "criterion_id", "grade__rollout_id", "met", "disagreement"
    )
    expert = {(e["criterion_id"], e["rollout_id"]): e["met"] for e in ExpertVerdict.objects.filter(criterion__rubric_version=rubric_version).values("criterion_id", "rollout_id", "met")}
    rows = []
    for criterion in rubric_version.criteria.all():
        mine = [v for v in verdicts if v["criterion_id"] == criterion.pk]
        pairs = [(v["met"], expert[(criterion.pk, v["grade__rollout_id"])]) for v in mine if (criterion.pk, v["grade__rollout_id"]) in expert]
        # Where the expert said nothing, they agree with the judge (they only mark disagreements).
        judged = [v["met"] for v in mine]
        agreed = [(v["met"], expert.get((criterion.pk, v["grade__rollout_id"]), v["met"])) for v in mine]
        counts = metrics.confusion([j for j, _ in agreed], [e for _, e in agreed]) if agreed else None
        rows.append({
            "criterion": criterion, "graded": len(judged), "expert_marks": len(pairs), "confusion": counts,
            "stability": 1 - (sum(v["disagreement"] for v in mine) / len(mine)) if mine else None,
        })
    return rows


def ranking_agreement(*, batch: RolloutBatch, user, rubric_version: RubricVersion | None = None) -> dict | None:
    ranking = Ranking.objects.filter(batch=batch, expert=user).first()
    if ranking is None:
        return None
    rubric = rubric_version or batch.rubric_version
    scores = dict(Grade.objects.filter(rollout__batch=batch, rubric_version=rubric, status=GradeStatus.GRADED).values_list("rollout_id", "score"))
    ranked = [pk for pk in ranking.order if pk in scores]
    if len(ranked) < 3:
        return {"points": [], "tau": None, "rho": None, "warning": "Rank at least three graded trajectories to compare."}
    expert_score = [len(ranked) - i for i in range(len(ranked))]  # best first → highest
    rubric_scores = [scores[pk] for pk in ranked]
    tau, rho = metrics.kendall_tau_b(rubric_scores, expert_score), metrics.spearman_rho(rubric_scores, expert_score)
    warning = ""
    if math.isnan(tau):
        warning = "The rubric gives every ranked trajectory the same score: it cannot tell them apart."
    elif tau < LOW_AGREEMENT:
        warning = f"Low agreement (tau {tau:.2f}): the rubric does not order these trajectories the way you do."
    return {"points": list(zip(ranked, rubric_scores, range(1, len(ranked) + 1), strict=True)), "tau": None if math.isnan(tau) else tau,
            "rho": None if math.isnan(rho) else rho, "warning": warning}


def difficulty(*, batch: RolloutBatch, rubric_version: RubricVersion | None = None) -> dict:
    """pass@k over the batch's finished rollouts (failed ones count as not passed)."""
    rubric = rubric_version or batch.rubric_version
    finished = batch.rollouts.filter(status__in=[RolloutStatus.COMPLETED, RolloutStatus.FAILED]).count()
    passed = Grade.objects.filter(rollout__batch=batch, rubric_version=rubric, status=GradeStatus.GRADED, passed=True).count()
    curve = [(k, metrics.pass_at_k(finished, passed, k)) for k in KS if k <= finished]
    band = metrics.difficulty_band(curve[0][1], curve[-1][1]) if curve else ""
    return {"n": finished, "c": passed, "curve": curve, "band": band}


def task_measurements(pairs: list[tuple[int, int]]) -> dict[tuple[int, int], tuple[dict | None, float | None]]:
    """What a pack's manifest says of each (task, rubric version): the difficulty measured
    by the task's latest batch graded on that rubric version (None when there is none),
    and the model cost of all the task's trial rollouts in USD (None when it never ran
    any). A few queries for the whole list, whatever its length (plus two per measured
    batch). For a build, not a page: no access rule."""
    from django.db.models import Sum

    task_ids = {task for task, _ in pairs}
    spent = dict(Rollout.objects.filter(batch__env_task_id__in=task_ids).values_list("batch__env_task_id")
                 .annotate(total=Sum("cost")).values_list("batch__env_task_id", "total"))
    latest: dict[tuple[int, int], int] = {}
    graded = (RolloutBatch.objects.filter(env_task_id__in=task_ids, rubric_version_id__in={rubric for _, rubric in pairs},
                                          rollouts__grades__rubric_version_id=F("rubric_version_id"), rollouts__grades__status=GradeStatus.GRADED)
              .order_by("-created_at", "-id").values_list("pk", "env_task_id", "rubric_version_id").distinct())
    for batch_id, task, rubric in graded:
        latest.setdefault((task, rubric), batch_id)
    batches = RolloutBatch.objects.in_bulk([latest[p] for p in pairs if p in latest])
    found = {}
    for task, rubric in pairs:
        cost = None if spent.get(task) is None else float(spent[task])
        measured = difficulty(batch=batches[latest[(task, rubric)]]) if (task, rubric) in latest else None
        if not measured or not measured["curve"]:
            found[(task, rubric)] = (None, cost)
            continue
        k, top = measured["curve"][-1]
        found[(task, rubric)] = ({"batch_id": latest[(task, rubric)], "n": measured["n"], "c": measured["c"],
                                  "pass_at_1": measured["curve"][0][1], "k": k, "pass_at_k": top, "band": measured["band"]}, cost)
    return found
