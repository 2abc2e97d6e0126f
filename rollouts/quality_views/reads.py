"""Reads behind the verifier panel, the batch quality page and their API. Objects are
reached through the access-scoped selectors (404 outside your projects); what is here
assembles them into plain rows for the templates and serializers. Writes go through the
services (rollouts.quality, rollouts.probes, rollouts.grading.services,
authoring.services.rubric_settings_update)."""

import math
from statistics import mean

from django.db.models import Prefetch
from django.shortcuts import get_object_or_404

from accounts.selectors import project_list_for_user
from authoring.models import Criterion, EnvTask, GraderKind, RubricVersion
from authoring.selectors import rubric_version_current
from rollouts import selectors
from rollouts.grading.attempt import Attempt, attempt_of_rollout
from rollouts.grading.judge import SEES, judge_messages
from rollouts.models import ExpertVerdict, Grade, GradeStatus, ProbeRun, Ranking, Rollout, RolloutBatch, RolloutStatus, Verdict
from rollouts.probes import probe_results
from rollouts.quality import criterion_agreement, difficulty

PENDING = (GradeStatus.QUEUED, GradeStatus.RUNNING)


# --- Access ------------------------------------------------------------------------------

def probe_run_get_for_user(*, user, pk: int) -> ProbeRun:
    runs = ProbeRun.objects.filter(env_task__project__in=project_list_for_user(user=user))
    return get_object_or_404(runs.select_related("env_task", "rubric_version", "created_by"), pk=pk)


def probe_run_latest(*, env_task: EnvTask) -> ProbeRun | None:
    return env_task.probe_runs.select_related("rubric_version", "created_by").first()


def batch_latest_for_task(*, user, env_task: EnvTask) -> RolloutBatch | None:
    return selectors.batch_list_for_task(user=user, env_task=env_task).first()


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


def grade_rows(*, batch: RolloutBatch, rubric: RubricVersion, user) -> list[dict]:
    """Every rollout of the batch with its grade under `rubric`, and per criterion the
    judge's verdict next to the user's own call (None: they agree with the judge)."""
    grades = _grades(batch, rubric)
    criteria = list(rubric.criteria.all())
    mine = {
        (e.rollout_id, e.criterion_id): e.met
        for e in ExpertVerdict.objects.filter(rollout__batch=batch, expert=user, criterion__rubric_version=rubric)
    }
    rows = []
    for rollout in batch.rollouts.order_by("index"):
        grade = grades.get(rollout.pk)
        by_criterion = {v.criterion_id: v for v in grade.verdicts.all()} if grade else {}
        cells = [
            {"criterion": c, "verdict": by_criterion.get(c.pk), "expert": mine.get((rollout.pk, c.pk))}
            for c in criteria
        ] if grade else []
        rows.append({"rollout": rollout, "number": rollout.index + 1, "grade": grade, "cells": cells,
                     "pending": grade is not None and grade.status in PENDING})
    return rows


def grade_summary(grades: list[Grade | None], *, rollouts: int) -> dict:
    graded = [g for g in grades if g is not None and g.status == GradeStatus.GRADED]
    return {
        "rollouts": rollouts,
        "graded": len(graded),
        "pending": sum(1 for g in grades if g is not None and g.status in PENDING),
        "failed": sum(1 for g in grades if g is not None and g.status == GradeStatus.FAILED),
        "passed": sum(1 for g in graded if g.passed),
        "mean": mean(g.score for g in graded) if graded else None,
    }


def pending_grades(*, batch: RolloutBatch, rubric: RubricVersion) -> int:
    return Grade.objects.filter(rollout__batch=batch, rubric_version=rubric, status__in=PENDING).count()


def grade_changes(*, batch: RolloutBatch, old: RubricVersion, new: RubricVersion) -> dict:
    """Each completed rollout's score and pass under two rubric versions, with the change."""
    before, after = _grades(batch, old), _grades(batch, new)
    rows = []
    for rollout in batch.rollouts.filter(status=RolloutStatus.COMPLETED).order_by("index"):
        a, b = before.get(rollout.pk), after.get(rollout.pk)
        sa = a.score if a and a.status == GradeStatus.GRADED else None
        sb = b.score if b and b.status == GradeStatus.GRADED else None
        rows.append({
            "rollout": rollout, "number": rollout.index + 1, "old": a, "new": b,
            "delta": None if sa is None or sb is None else sb - sa,
            "pass_changed": bool(a and b and a.passed is not None and b.passed is not None and a.passed != b.passed),
        })
    count = batch.rollouts.filter(status=RolloutStatus.COMPLETED).count()
    old_summary = grade_summary([r["old"] for r in rows], rollouts=count)
    new_summary = grade_summary([r["new"] for r in rows], rollouts=count)
    mean_delta = None if old_summary["mean"] is None or new_summary["mean"] is None else new_summary["mean"] - old_summary["mean"]
    return {"old_rubric": old, "new_rubric": new, "rows": rows, "old": old_summary, "new": new_summary, "mean_delta": mean_delta,
            "changed": sum(1 for r in rows if (r["delta"] or 0) != 0 or r["pass_changed"])}


def batch_scores(*, batch: RolloutBatch, rubric: RubricVersion) -> list[float]:
    return list(
        Grade.objects.filter(rollout__batch=batch, rubric_version=rubric, status=GradeStatus.GRADED).values_list("score", flat=True)
    )


def batch_difficulty(*, batch: RolloutBatch, rubric: RubricVersion) -> dict:
    return {**difficulty(batch=batch, rubric_version=rubric), "rubric": rubric, "pending": pending_grades(batch=batch, rubric=rubric)}


# --- Ranking --------------------------------------------------------------------------------

def ranking_items(*, batch: RolloutBatch, user) -> tuple[list[Rollout], bool]:
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
        "unstable": row["stability"] is not None and row["stability"] < 1,
    }


def agreement_rows(*, rubric: RubricVersion) -> list[dict]:
    return [agreement_view(row) for row in criterion_agreement(rubric_version=rubric)]


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


def probe_rows(*, run: ProbeRun, current: list[Criterion]) -> list[dict]:
    """probe_results, plus for each fooled criterion the same criterion in the current
    rubric (by text) so the page can open it for editing."""
    by_text = {c.text: c for c in current}
    rows = probe_results(run=run)
    for row in rows:
        row["fooled_links"] = [(c, by_text.get(c.text)) for c in row["fooled"]]
        row["pending"] = row["grade"] is None or row["grade"].status in PENDING
    return rows
