"""Reads of the verifier-quality tools: how far the verifier can be trusted (judge vs
expert verdicts, rubric vs expert ranking, judge stability, difficulty as pass@k, the
reward-hacking probes), and the rows the Verifier panel, the batch quality page and their
API show. Objects are reached through the access-scoped selectors (404 outside your
projects); what is here assembles them into plain rows. Writes are in
verification.services, rollouts.grading.services and authoring.services."""

import math
from collections import Counter
from statistics import mean

from django.db.models import Count, F, Prefetch, Sum
from django.shortcuts import get_object_or_404

from accounts.models import User
from accounts.selectors import project_list_for_user
from authoring.models import Criterion, EnvTask, GraderKind, RubricVersion
from authoring.selectors import rubric_version_current
from rollouts import selectors as rollout_selectors
from rollouts.grading.attempt import Attempt, attempt_of_rollout
from rollouts.grading.judge import SEES, judge_messages
from rollouts.models import (
    Grade,
    GradeStatus,
    ProbeRun,
    ProbeRunStatus,
    Ranking,
    Rollout,
    RolloutBatch,
    RolloutStatus,
    Verdict,
)
from verification import expert_labels, metrics, rubric_checks, versions
from verification.probes import CHEAT_KINDS, CONTROL, MODEL_CHEAT

PENDING = (GradeStatus.QUEUED, GradeStatus.RUNNING)
CHEATS_PENDING = (ProbeRunStatus.QUEUED, ProbeRunStatus.WRITING)
LOW_AGREEMENT = rubric_checks.LOW_AGREEMENT
KS = (1, 2, 4, 8, 16)


# --- How far the verifier can be trusted -------------------------------------------------------

def criterion_agreement(*, rubric_version: RubricVersion) -> list[dict]:
    """Per criterion: judge vs expert confusion counts, precision, recall, F1, and how often
    the judge's own samples disagree."""
    verdicts = Verdict.objects.filter(
        grade__rubric_version=rubric_version, grade__status=GradeStatus.GRADED, grade__rollout__isnull=False
    ).values("criterion_id", "grade__rollout_id", "met", "disagreement")
    # (an expert's calls on this version's criteria, carried over from earlier versions where the criterion did not change)
    expert = expert_labels.calls_by_criterion_and_rollout(expert_labels.expert_calls(rubric_version=rubric_version))
    rows = []
    for criterion in rubric_version.criteria.all():
        mine = [v for v in verdicts if v["criterion_id"] == criterion.pk]
        pairs = [
            (v["met"], expert[(criterion.pk, v["grade__rollout_id"])]) for v in mine if (criterion.pk, v["grade__rollout_id"]) in expert
        ]
        # Where the expert said nothing, they agree with the judge (they only mark disagreements).
        judged = [v["met"] for v in mine]
        agreed = [(v["met"], expert.get((criterion.pk, v["grade__rollout_id"]), v["met"])) for v in mine]
        counts = metrics.confusion([j for j, _ in agreed], [e for _, e in agreed]) if agreed else None
        if counts and not pairs:  # no expert mark: nothing to measure the judge against, not a perfect score
            counts |= {"precision": math.nan, "recall": math.nan, "f1": math.nan}
        # One judge sample per verdict (or a check) cannot disagree with itself: no stability figure.
        sampled = rubric_version.judge_samples > 1 and criterion.grader_kind != GraderKind.CHECK
        rows.append({
            "criterion": criterion, "graded": len(judged), "expert_marks": len(pairs), "confusion": counts,
            "stability": 1 - (sum(v["disagreement"] for v in mine) / len(mine)) if mine and sampled else None,
        })
    return rows


def ranking_agreement(*, batch: RolloutBatch, user: User, rubric_version: RubricVersion | None = None) -> dict | None:
    """The user's ranking against the rubric's scores: tau-b and rho, and the ranking check's
    warnings (verification.rubric_checks) with the criteria that cause them."""
    ranking = Ranking.objects.filter(batch=batch, expert=user).first()
    if ranking is None:
        return None
    rubric = rubric_version or batch.rubric_version
    scores = dict(
        Grade.objects.filter(rollout__batch=batch, rubric_version=rubric, status=GradeStatus.GRADED).values_list("rollout_id", "score")
    )
    ranked = [pk for pk in ranking.order if pk in scores]
    if len(ranked) < 3:
        return {
            "points": [],
            "tau": None,
            "rho": None,
            "warning": "Rank at least three graded trajectories to compare.",
            "warnings": [],
            "culprits": [],
        }
    expert_score = [len(ranked) - i for i in range(len(ranked))]  # best first → highest
    rubric_scores = [scores[pk] for pk in ranked]
    tau, rho = metrics.kendall_tau_b(rubric_scores, expert_score), metrics.spearman_rho(rubric_scores, expert_score)
    verdicts = {(rollout, criterion): met for rollout, criterion, met in Verdict.objects.filter(
        grade__rollout_id__in=ranked, grade__rubric_version=rubric, grade__status=GradeStatus.GRADED
    ).values_list("grade__rollout_id", "criterion_id", "met")}
    check = rubric_checks.ranking_warnings(ranked=ranked, scores=scores, tau=None if math.isnan(tau) else tau, verdicts=verdicts,
                                           criteria=list(rubric.criteria.all()), passing_probes=passing_probes(rubric_version=rubric))
    return {"points": list(zip(ranked, rubric_scores, range(1, len(ranked) + 1), strict=True)), "tau": None if math.isnan(tau) else tau,
            "rho": None if math.isnan(rho) else rho, "warning": " ".join(w["text"] for w in check["warnings"]), **check}


def passing_probes(*, rubric_version: RubricVersion) -> list[str]:
    """The labels of the probes (not the control) that pass this rubric version, in its latest probe run."""
    run = rubric_version.probe_runs.order_by("-created_at", "-id").first()
    if run is None:
        return []
    return list(Grade.objects.filter(probe__run=run, rubric_version=rubric_version, status=GradeStatus.GRADED, passed=True)
                .exclude(probe__kind=CONTROL).order_by("probe_id").values_list("probe__label", flat=True))


def difficulty(*, batch: RolloutBatch, rubric_version: RubricVersion | None = None) -> dict:
    """pass@k over the batch's graded rollouts, plus those that failed to run (not passed).
    A completed rollout whose grade failed, was cancelled, is pending or is missing is left
    out of n (a grade not reached says nothing of the task); `grading_failed` and
    `grading_cancelled` count the failed and the cancelled ones."""
    rubric = rubric_version or batch.rubric_version
    finished = dict(batch.rollouts.filter(status__in=[RolloutStatus.COMPLETED, RolloutStatus.FAILED]).order_by().values_list("status")
                    .annotate(n=Count("id")).values_list("status", "n"))
    grades = Grade.objects.filter(rollout__batch=batch, rollout__status=RolloutStatus.COMPLETED, rubric_version=rubric)
    by_status = dict(grades.order_by().values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    n = by_status.get(GradeStatus.GRADED, 0) + finished.get(RolloutStatus.FAILED, 0)
    passed = grades.filter(status=GradeStatus.GRADED, passed=True).count()
    curve = [(k, metrics.pass_at_k(n, passed, k)) for k in KS if k <= n]
    band = metrics.difficulty_band(curve[0][1], curve[-1][1]) if curve else ""
    return {"n": n, "c": passed, "curve": curve, "band": band, "finished": sum(finished.values()),
            "grading_failed": by_status.get(GradeStatus.FAILED, 0), "grading_cancelled": by_status.get(GradeStatus.CANCELLED, 0)}


def task_measurements(pairs: list[tuple[int, int]]) -> dict[tuple[int, int], tuple[dict | None, float | None]]:
    """What a pack's manifest says of each (task, rubric version): the difficulty measured
    by the task's latest batch of a real model graded on that rubric version, with the
    model's name (None when there is none: a scripted sample model's batches measure
    nothing about a task), and the model cost of all the task's trial rollouts on real
    models in USD (None when it never ran any: the sample model's $0 is no cost figure).
    A few queries for the whole list, whatever its length (plus two
    per measured batch). For a build, not a page: no access rule."""
    task_ids = {task for task, _ in pairs}
    spent = dict(Rollout.objects.filter(batch__env_task_id__in=task_ids, batch__endpoint_scripted=False).values_list("batch__env_task_id")
                 .annotate(total=Sum("cost")).values_list("batch__env_task_id", "total"))
    latest: dict[tuple[int, int], int] = {}
    graded = (RolloutBatch.objects.filter(env_task_id__in=task_ids, rubric_version_id__in={rubric for _, rubric in pairs},
                                          endpoint_scripted=False, rollouts__grades__rubric_version_id=F("rubric_version_id"),
                                          rollouts__grades__status=GradeStatus.GRADED)
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
        found[(task, rubric)] = ({"batch_id": latest[(task, rubric)], "model": batches[latest[(task, rubric)]].endpoint_name,
                                  "n": measured["n"], "c": measured["c"],
                                  "pass_at_1": measured["curve"][0][1], "k": k, "pass_at_k": top, "band": measured["band"]}, cost)
    return found



# --- Access ------------------------------------------------------------------------------

def probe_run_get_for_user(*, user: User, pk: int) -> ProbeRun:
    runs = ProbeRun.objects.filter(env_task__project__in=project_list_for_user(user=user))
    return get_object_or_404(runs.select_related("env_task", "rubric_version", "created_by"), pk=pk)


def probe_run_latest(*, env_task: EnvTask) -> ProbeRun | None:
    return env_task.probe_runs.select_related("rubric_version", "created_by", "cheat_endpoint", "judge_endpoint").first()


def batch_latest_for_task(*, user: User, env_task: EnvTask) -> RolloutBatch | None:
    return rollout_selectors.batch_list_for_task(user=user, env_task=env_task).first()


def batch_rollout(*, batch: RolloutBatch, pk: int) -> Rollout:
    return get_object_or_404(batch.rollouts.all(), pk=pk)


def task_criterion(*, env_task_id: int, pk: int) -> Criterion:
    """A criterion of any rubric version of this task (the caller has the task already)."""
    return get_object_or_404(Criterion.objects.filter(rubric_version__env_task_id=env_task_id).select_related("rubric_version"), pk=pk)


# --- Which rubric version's grades ---------------------------------------------------------

def graded_versions(*, batch: RolloutBatch) -> list[RubricVersion]:
    """The rubric versions that have graded (or are grading) this batch, oldest first."""
    return list(RubricVersion.objects.filter(grades__rollout__batch=batch).distinct().order_by("number"))


def grading_rubric(*, batch: RolloutBatch, number: int | None = None) -> tuple[RubricVersion, list[RubricVersion]]:
    """The version whose grades the page shows: the one asked for, else the newest that
    graded the batch (a regrade makes the new version the default), else the batch's own."""
    versions = graded_versions(batch=batch)
    chosen = next((v for v in versions if v.number == number), None) if number else None
    return chosen or (versions[-1] if versions else batch.rubric_version), versions


def previous_version(versions: list[RubricVersion], rubric: RubricVersion, number: int | None = None) -> RubricVersion | None:
    """The version to compare with: the one asked for, else the graded one just before."""
    if number:
        chosen = next((v for v in versions if v.number == number and v.pk != rubric.pk), None)
        if chosen:
            return chosen
    older = [v for v in versions if v.number < rubric.number]
    return older[-1] if older else None


# --- Grades ----------------------------------------------------------------------------------

def _grades(batch: RolloutBatch, rubric: RubricVersion) -> dict[int, Grade]:
    verdicts = Prefetch("verdicts", queryset=Verdict.objects.select_related("criterion"))
    return {g.rollout_id: g for g in Grade.objects.filter(rollout__batch=batch, rubric_version=rubric).prefetch_related(verdicts)}


def grade_rows(*, batch: RolloutBatch, rubric: RubricVersion, user: User) -> list[dict]:
    """Every rollout of the batch with its grade under `rubric`, and per criterion the
    judge's verdict next to the user's own call (None: they agree with the judge)."""
    grades = _grades(batch, rubric)
    criteria = list(rubric.criteria.all())
    rollouts = list(batch.rollouts.order_by("index"))
    # Their own calls, or carried over from an earlier version where the criterion's text and points did not change.
    mine = {
        (r, c): call
        for (r, c, _), call in expert_labels.expert_calls(
            rubric_version=rubric, rollout_ids=[r.pk for r in rollouts], expert_id=user.pk
        ).items()
    }
    previous_number, changed = versions.changed_since_previous(rubric, criteria)
    rows = []
    for rollout in rollouts:
        grade = grades.get(rollout.pk)
        by_criterion = {v.criterion_id: v for v in grade.verdicts.all()} if grade else {}
        cells = [
            {"criterion": c, "number": number, "verdict": by_criterion.get(c.pk), "expert": mine.get((rollout.pk, c.pk), (None, None))[0],
             "expert_from": mine.get((rollout.pk, c.pk), (None, None))[1], "changed_since": previous_number if c.pk in changed else None}
            for number, c in enumerate(criteria, start=1)
        ] if grade else []
        rows.append({"rollout": rollout, "number": rollout.index + 1, "grade": grade, "cells": cells,
                     "pending": grade is not None and grade.status in PENDING})
    return rows


def _count(grades: list[Grade | None], status: str) -> int:
    return sum(1 for g in grades if g is not None and g.status == status)


def grade_summary(grades: list[Grade | None], *, rollouts: int) -> dict:
    """How far the grades are: `done` counts every grade that ended (graded, failed or
    cancelled: nothing left to wait for); neither a failed nor a cancelled one is counted
    in pass@k, and Retry sends both (`unscored`) to the grader again."""
    graded = [g for g in grades if g is not None and g.status == GradeStatus.GRADED]
    failed, cancelled = _count(grades, GradeStatus.FAILED), _count(grades, GradeStatus.CANCELLED)
    return {
        "rollouts": rollouts,
        "graded": len(graded),
        "pending": sum(1 for g in grades if g is not None and g.status in PENDING),
        "failed": failed,
        "cancelled": cancelled,
        "unscored": failed + cancelled,
        "done": len(graded) + failed + cancelled,
        "passed": sum(1 for g in graded if g.passed),
        "mean": mean(g.score for g in graded) if graded else None,
    }


def pending_grades(*, batch: RolloutBatch, rubric: RubricVersion) -> int:
    return Grade.objects.filter(rollout__batch=batch, rubric_version=rubric, status__in=PENDING).count()


def grade_changes(*, batch: RolloutBatch, old: RubricVersion, new: RubricVersion) -> dict:
    """Each completed rollout's score and pass under two rubric versions, with the change; the
    criteria paired across the versions (verification.versions.criteria_pairs: `criteria`,
    with the old and new text of each changed one), and per rollout the criterion verdicts
    that flipped (`flips`: both versions reached a verdict on the pair, and they differ)."""
    before, after = _grades(batch, old), _grades(batch, new)
    pairs = versions.criteria_pairs(list(old.criteria.all()), list(new.criteria.all()))
    paired = [p for p in pairs if p.old is not None and p.new is not None]
    rows = []
    for rollout in batch.rollouts.filter(status=RolloutStatus.COMPLETED).order_by("index"):
        a, b = before.get(rollout.pk), after.get(rollout.pk)
        sa = a.score if a and a.status == GradeStatus.GRADED else None
        sb = b.score if b and b.status == GradeStatus.GRADED else None
        was = {v.criterion_id: v.met for v in a.verdicts.all()} if a else {}
        now = {v.criterion_id: v.met for v in b.verdicts.all()} if b else {}
        flips = [{"pair": p, "old_met": was[p.old.pk], "new_met": now[p.new.pk]} for p in paired
                 if was.get(p.old.pk) is not None and now.get(p.new.pk) is not None and was[p.old.pk] != now[p.new.pk]]
        rows.append({
            "rollout": rollout, "number": rollout.index + 1, "old": a, "new": b,
            "delta": None if sa is None or sb is None else sb - sa,
            "pass_changed": bool(a and b and a.passed is not None and b.passed is not None and a.passed != b.passed),
            "flips": flips,
        })
    count = batch.rollouts.filter(status=RolloutStatus.COMPLETED).count()
    old_summary = grade_summary([r["old"] for r in rows], rollouts=count)
    new_summary = grade_summary([r["new"] for r in rows], rollouts=count)
    mean_delta = None if old_summary["mean"] is None or new_summary["mean"] is None else new_summary["mean"] - old_summary["mean"]
    return {"old_rubric": old, "new_rubric": new, "rows": rows, "old": old_summary, "new": new_summary, "mean_delta": mean_delta,
            "changed": sum(1 for r in rows if (r["delta"] or 0) != 0 or r["pass_changed"]),
            "criteria": [p for p in pairs if p.kind != "same"], "flipped": sum(len(r["flips"]) for r in rows)}


def batch_scores(*, batch: RolloutBatch, rubric: RubricVersion) -> list[float]:
    return list(
        Grade.objects.filter(rollout__batch=batch, rubric_version=rubric, status=GradeStatus.GRADED).values_list("score", flat=True)
    )


def batch_difficulty(*, batch: RolloutBatch, rubric: RubricVersion) -> dict:
    return {**difficulty(batch=batch, rubric_version=rubric), "rubric": rubric, "pending": pending_grades(batch=batch, rubric=rubric)}


# --- Ranking --------------------------------------------------------------------------------

def ranking_items(*, batch: RolloutBatch, user: User) -> tuple[list[Rollout], bool]:
    """The completed trajectories in the user's saved order (new ones at the end), and
    whether a ranking is saved."""
    completed = {r.pk: r for r in batch.rollouts.filter(status=RolloutStatus.COMPLETED).order_by("index")}
    ranking = Ranking.objects.filter(batch=batch, expert=user).first()
    order = [pk for pk in (ranking.order if ranking else []) if pk in completed]
    order += [pk for pk in completed if pk not in order]
    return [completed[pk] for pk in order], ranking is not None


# --- Agreement --------------------------------------------------------------------------------

def _metric(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.2f}"


def agreement_view(row: dict | None) -> dict | None:
    """A criterion_agreement row with its numbers formatted ("—" where undefined)."""
    if row is None:
        return None
    counts = row["confusion"] or {}
    return {
        **row,
        "fp": counts.get("fp", 0), "fn": counts.get("fn", 0),
        "precision": _metric(counts.get("precision")), "recall": _metric(counts.get("recall")), "f1": _metric(counts.get("f1")),
        "stability_label": "—" if row["stability"] is None else f"{row['stability']:.0%}",
        "no_marks": not row["expert_marks"],
        "unstable": row["stability"] is not None and row["stability"] < 1,
    }


def agreement_rows(*, rubric: RubricVersion, ceiling: dict | None = None) -> list[dict]:
    """agreement_view rows, each with the experts' agreement on the criterion (`experts`, None
    without two experts on one verdict) and, for a criterion new or changed since the version
    before, that version's number (`changed_since`: expert calls start empty on it)."""
    rows = criterion_agreement(rubric_version=rubric)
    ceiling = ceiling or expert_labels.expert_ceiling(rubric_version=rubric)
    previous_number, changed = versions.changed_since_previous(rubric, [row["criterion"] for row in rows])
    return [agreement_view(row) | {"experts": ceiling["criteria"].get(row["criterion"].pk),
                                   "changed_since": previous_number if row["criterion"].pk in changed else None} for row in rows]


def graded_rubric_for_task(*, env_task: EnvTask) -> RubricVersion | None:
    """The newest rubric version of the task that has graded a trajectory."""
    return env_task.rubric_versions.filter(grades__rollout__isnull=False, grades__status=GradeStatus.GRADED).order_by("-number").first()


def agreement_for_current(*, env_task: EnvTask) -> tuple[list[tuple[Criterion, dict | None]], RubricVersion | None]:
    """Judge-vs-expert numbers for each criterion of the current rubric. They come from the
    newest version that graded anything; a criterion rewritten since has none yet."""
    current = rubric_version_current(env_task=env_task)
    criteria = list(current.criteria.all()) if current else []
    graded = graded_rubric_for_task(env_task=env_task)
    rows = {row["criterion"].text: row for row in agreement_rows(rubric=graded)} if graded else {}
    return [(c, rows.get(c.text)) for c in criteria], graded


# --- The judge prompt and the probes -------------------------------------------------------------

def judge_prompt(*, env_task: EnvTask, criterion: Criterion, batch: RolloutBatch | None) -> dict:
    """The messages the judge gets for this criterion, on the latest completed trajectory
    (or placeholders when there is none yet)."""
    rollout = batch.rollouts.filter(status=RolloutStatus.COMPLETED).order_by("index").first() if batch else None
    if rollout is not None:
        attempt = attempt_of_rollout(rollout)
    else:
        attempt = Attempt(prompt=env_task.prompt, answer="(the agent's final answer goes here)",
                          trajectory="(the agent's steps go here)", changed_files=[("(a file the agent wrote)", "(its text)")])
    sees = [s for s in criterion.grader_config.get("sees", ["answer"]) if s in SEES] or ["answer"]
    messages = judge_messages(criterion_text=criterion.text, points=criterion.points, attempt=attempt, sees=sees)
    return {"criterion": criterion, "messages": messages, "rollout": rollout, "sees": sees,
            "is_check": criterion.grader_kind == GraderKind.CHECK}


def probe_results(*, run: ProbeRun) -> list[dict]:
    """Each probe with its grade and, when flagged (verification.rubric_checks.probe_flagged,
    by the run's own flag score), the criteria it fooled. The control (the reference answer)
    is marked `control` and never flagged."""
    probes = list(run.answers.prefetch_related("grades__verdicts__criterion"))
    grades = {p.pk: next(iter(p.grades.all()), None) for p in probes}
    control = next((grades[p.pk] for p in probes if p.kind == CONTROL), None)
    reference_score = control.score if control is not None and control.status == GradeStatus.GRADED else None
    reference = run.env_task.reference_answer or ""
    rows = []
    for probe in probes:
        grade = grades[probe.pk]
        flagged = rubric_checks.probe_flagged(probe, grade, flag_score=run.flag_score, reference_score=reference_score)
        met = [v.criterion for v in grade.verdicts.all() if v.met and v.criterion.points > 0] if flagged else []
        rows.append({"probe": probe, "grade": grade, "flagged": flagged, "control": probe.kind == CONTROL,
                     "fooled": rubric_checks.fooled_criteria(probe, met, reference) if flagged else []})
    return rows


def probe_summary(rows: list[dict]) -> dict:
    """What the run's summary line says, from probe_results rows: how many probes were
    graded and flagged, how many could not be graded (and the most common reason why), how
    many were cancelled before they were; `unscored` is both (they prove nothing either way)."""
    grades = [r["grade"] for r in rows]
    failed = [g for g in grades if g is not None and g.status == GradeStatus.FAILED]
    cancelled = _count(grades, GradeStatus.CANCELLED)
    reasons = Counter(g.error for g in failed if g.error).most_common(1)
    return {"total": len(rows), "graded": _count(grades, GradeStatus.GRADED), "flagged": sum(1 for r in rows if r["flagged"]),
            "failed": len(failed), "reason": reasons[0][0] if reasons else "", "cancelled": cancelled,
            "unscored": len(failed) + cancelled}


def probe_state(*, run: ProbeRun, rows: list[dict], summary: dict) -> tuple[str, str]:
    """The run's state and its label in a few words (see probe_status). A probe that failed or
    was cancelled proves nothing either way: the run is not clear while one is left."""
    if probe_cheats_pending(run) or any(r["grade"] is None or r["grade"].status in PENDING for r in rows):
        return "running", "Probes running"
    if probes_judged_by_sample(run=run, rows=rows):
        return "sample", "Judged by the scripted sample model: proves nothing"
    if summary["flagged"]:
        return "flagged", f"{summary['flagged']} probe{'s' if summary['flagged'] > 1 else ''} flagged"
    if summary["unscored"] and not summary["graded"]:
        return "not_graded", "The probes could not be graded" if summary["failed"] else "The probe run was cancelled: no probe graded"
    if summary["unscored"]:
        if not summary["cancelled"]:
            why = "could not be graded"
        elif not summary["failed"]:
            why = "were cancelled before they were graded"
        else:
            why = "were not graded (failed or cancelled)"
        return "partly_graded", f"None flagged, but {summary['unscored']} of {summary['total']} {why}"
    control = next((r["grade"] for r in rows if r["control"]), None)
    if control is not None and control.status == GradeStatus.GRADED and not control.passed:
        # A rubric its own reference answer fails also fails every probe: "none flagged" proves nothing.
        return "reference_fails", "The reference answer fails: no probe can pass"
    return "clear", "No probe flagged"


def probes_judged_by_sample(*, run: ProbeRun, rows: list[dict]) -> bool:
    """The run's LLM-judged verdicts came from the scripted sample model, whose verdicts are
    placeholders: then what the probes scored says nothing about the rubric. (A rubric of
    deterministic checks only is graded without the judge.)"""
    judge = run.judge_endpoint
    if judge is None or not judge.is_scripted:
        return False
    return any(v.criterion.grader_kind == GraderKind.LLM_JUDGE for r in rows if r["grade"] is not None for v in r["grade"].verdicts.all())


def probe_cheats_pending(run: ProbeRun) -> bool:
    """The run's cheat model is still to write (or writing) its cheats."""
    return run.status in CHEATS_PENDING


def probe_rows(*, run: ProbeRun, current: list[Criterion]) -> list[dict]:
    """probe_results, plus for each fooled criterion the same criterion in the current
    rubric (by text) so the page can open it for editing, and the suggested fixes: the
    criterion tightened with the evidence it lacks, and a pitfall to add."""
    by_text = {c.text: c for c in current}
    rows = probe_results(run=run)
    reference = run.env_task.reference_answer or ""
    for row in rows:
        row["fooled_links"] = [(c, by_text.get(c.text)) for c in row["fooled"]]
        row["pending"] = row["grade"] is None or row["grade"].status in PENDING
        row["kind_label"] = rubric_checks.probe_kind_label(row["probe"])
        row["fixes"], row["pitfall"] = [], None
        if row["flagged"]:
            fixes, row["pitfall"] = rubric_checks.probe_fixes(row["probe"], row["grade"], row["fooled"], reference)
            row["fixes"] = [{**fix, "current": by_text.get(fix["criterion"].text)} for fix in fixes]
    return rows


def probe_progress(*, run: ProbeRun, rows: list[dict]) -> dict:
    """How far the run is: the probes graded (or failed, or cancelled) of those there are,
    and, with a cheat model, how many kinds of cheat it has written."""
    done = sum(1 for r in rows if r["grade"] is not None and r["grade"].status not in PENDING)
    written = {(r["probe"].detail or {}).get("aimed_at") for r in rows if r["probe"].kind == MODEL_CHEAT}
    writes = run.cheat_endpoint_id is not None or run.status in CHEATS_PENDING
    return {"done": done, "total": len(rows), "percent": round(100 * done / len(rows)) if rows else 0,
            "cheat_kinds": len(CHEAT_KINDS) if writes else 0, "cheat_kinds_written": len(written - {None})}


def probe_status(*, env_task: EnvTask, rubric_version: RubricVersion | None = None, rows: list[dict] | None = None) -> dict:
    """The rubric's probe status, in a few words, for the task page and for what a reviewer
    sees: the latest probe run of the task and what it found for `rubric_version` (by
    default the current one). The caller has the task already (through an access-scoped
    selector). `state`: none, running, sample (judged by the scripted sample model), flagged,
    not_graded, partly_graded, reference_fails, clear; `stale`:
    the run probed another rubric version. `rows`: the latest run's probe_results, when the
    caller has them already (the panel does)."""
    rubric = rubric_version or rubric_version_current(env_task=env_task)
    run = probe_run_latest(env_task=env_task)
    if run is None:
        return {"state": "none", "label": "Not probed yet", "run": None, "stale": False, "flagged": 0, "graded": 0, "failed": 0, "total": 0,
                "reference_fails": False}
    if rows is None or any(r["probe"].run_id != run.pk for r in rows):
        rows = probe_results(run=run)
    summary = probe_summary(rows)
    state, label = probe_state(run=run, rows=rows, summary=summary)
    control = next((r["grade"] for r in rows if r["control"]), None)
    stale = rubric is not None and run.rubric_version_id != rubric.pk
    return {"state": state, "label": label, "run": run, "rubric_number": run.rubric_version.number, "stale": stale, **summary,
            "reference_fails": bool(control and control.status == GradeStatus.GRADED and not control.passed),
            "reference_score": control.score if control and control.status == GradeStatus.GRADED else None}
