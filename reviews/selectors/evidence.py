"""What a reviewer decides on, for the submitted task version: the trials graded on the
submitted rubric version (pass rate, score distribution, pass@k and band, every
trajectory), the reward-hacking probes with the author's explanations, judge-vs-expert
agreement and rank correlation, the world in the replica apps with its documents shown as
the apps show them, the author's note, and the reviews of the task's earlier versions.

A bounded number of queries whatever the size of the batch or the rubric: rows are read
per table, never per rollout or per criterion."""

import math
import re
from html import unescape

from django.db.models import Prefetch
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from accounts.models import User
from accounts.selectors import membership_get
from authoring.models import DocumentKind, EnvTask, RubricVersion
from authoring.rendering import preview_html
from reviews.models import ProbeExplanation, Review, Submission
from reviews.selectors.diff import document_anchor, document_type
from reviews.selectors.gates import graded_rollouts, latest_graded_batch
from rollouts.models import Grade, GradeStatus, ProbeRun, Ranking, RolloutBatch, RolloutStatus
from verification import selectors as verification
from verification.rubric_checks import probe_kind_label
from verification.views import plots

# The world's documents are shown whole on the review page; past this many, the rest are read in the apps.
MAX_DOCUMENTS_SHOWN = 200
APPS = (("drive", "Drive", DocumentKind.FILE, "files"), ("mail", "Mail", DocumentKind.EMAIL, "emails"),
        ("chat", "Chat", DocumentKind.CHAT, "chat messages"), ("calendar", "Calendar", DocumentKind.EVENT, "events"))
KIND_APP = {kind: app for app, _, kind, _ in APPS}
# A formula cell in the Drive's spreadsheet preview: <td …><code>=SUM(B2:B3)</code> → 10,000,000</td>.
FORMULA_CELL = re.compile(r"<td([^>]*)><code>([^<]*)</code> → ")


def submission_evidence(*, submission: Submission, user: User) -> dict:
    """The evidence for one submission, for a member of its project (404 for anyone else)."""
    membership_get(user=user, project_id=submission.project_id)
    env_task, rubric = submission.env_task, submission.rubric_version
    trials = _trials(env_task, rubric)
    return {
        "rubric_number": rubric.number,
        "trials": trials,
        "probes": _probes(env_task, rubric),
        "agreement": _agreement(rubric, trials["batch"]),
        "world": _world(submission),
        "author_note": submission.author_note,
        "earlier": _earlier(submission),
    }


# --- Trials -----------------------------------------------------------------------------------

def _trials(env_task: EnvTask, rubric: RubricVersion) -> dict:
    batch = latest_graded_batch(env_task=env_task, rubric_version=rubric)
    if batch is None:
        return {"batch": None, "other_batches": RolloutBatch.objects.filter(env_task=env_task).count()}
    measured = verification.batch_difficulty(batch=batch, rubric=rubric)
    scores = verification.batch_scores(batch=batch, rubric=rubric)
    grades = {g.rollout_id: g for g in Grade.objects.filter(rollout__batch=batch, rubric_version=rubric)
              .only("rollout_id", "status", "score", "passed", "error")}
    trajectories = []
    for rollout in batch.rollouts.order_by("index").only("pk", "index", "status", "reason", "overlay_id", "batch_id"):
        grade = grades.get(rollout.pk)
        graded = grade is not None and grade.status == GradeStatus.GRADED
        trajectories.append({
            "number": rollout.index + 1, "url": reverse("rollout-detail", args=[rollout.pk]),
            "status": rollout.status, "status_label": rollout.get_status_display(), "reason": rollout.reason,
            "score": grade.score if graded else None, "passed": grade.passed if graded else None,
            "grade_label": _grade_label(rollout.status, grade),
            "changes_url": reverse("overlay-changes", args=[rollout.overlay_id]) if rollout.overlay_id else "",
        })
    passed = sum(1 for g in grades.values() if g.status == GradeStatus.GRADED and g.passed)
    curve = measured["curve"]
    return {
        "batch": batch,
        "batch_url": reverse("batch-detail", args=[batch.pk]),
        "verdicts_url": f"{reverse('batch-quality', args=[batch.pk])}?rubric={rubric.number}",
        "graded": len(scores),
        "passed": passed,
        "pass_rate": passed / len(scores) if scores else None,
        "pass_rate_label": f"{passed / len(scores):.0%}" if scores else "—",
        "mean_score": sum(scores) / len(scores) if scores else None,
        "difficulty": measured,
        "pass1": curve[0][1] if curve else None,
        "top_k": curve[-1] if curve else None,
        "band": measured["band"],
        "curve_plot": plots.pass_at_k_plot(curve) if curve else None,
        "histogram": plots.histogram_plot(scores, threshold=None if rubric.all_must_pass else rubric.pass_threshold) if scores else None,
        "threshold": None if rubric.all_must_pass else rubric.pass_threshold,
        "all_must_pass": rubric.all_must_pass,
        "graded_on_rubric": graded_rollouts(env_task=env_task, rubric_version=rubric),
        "trajectories": trajectories,
    }


def _grade_label(status: str, grade: Grade | None) -> str:
    if status != RolloutStatus.COMPLETED:
        return ""
    if grade is None:
        return "not graded on this rubric version"
    if grade.status == GradeStatus.GRADED:
        return "passed" if grade.passed else "failed"
    if grade.status == GradeStatus.FAILED:
        return "could not be graded"
    if grade.status == GradeStatus.CANCELLED:
        return "grading cancelled"
    return "grading"


# --- Probes -----------------------------------------------------------------------------------

def _probes(env_task: EnvTask, rubric: RubricVersion) -> dict:
    """The latest probe run on the submitted rubric version (a later run on another version
    says nothing about this one), with each flagged probe, the criteria it fooled and the
    author's explanation of it."""
    runs = (ProbeRun.objects.filter(env_task=env_task).select_related("rubric_version", "env_task", "judge_endpoint")
            .order_by("-created_at", "-id"))
    run = runs.filter(rubric_version=rubric).first()
    if run is None:
        other = runs.first()
        return {"state": "none", "label": "Not probed on this rubric version", "run": None,
                "other_rubric_number": other.rubric_version.number if other else None, "flagged": []}
    rows = verification.probe_results(run=run)
    summary = verification.probe_summary(rows)
    state, label = verification.probe_state(run=run, rows=rows, summary=summary)
    explanations = {e.probe_id: e for e in ProbeExplanation.objects.filter(probe__run=run).select_related("author")}
    flagged = [{
        "label": r["probe"].label, "kind_label": probe_kind_label(r["probe"]), "answer": r["probe"].answer,
        "score": r["grade"].score if r["grade"] is not None else None,
        "fooled": [{"text": c.text, "points": c.points} for c in r["fooled"]],
        "explanation": explanations.get(r["probe"].pk),
    } for r in rows if r["flagged"]]
    control = next((r["grade"] for r in rows if r["control"]), None)
    return {"state": state, "label": label, "run": run, **summary, "flagged": flagged,
            "unexplained": sum(1 for f in flagged if f["explanation"] is None),
            "reference_fails": bool(control and control.status == GradeStatus.GRADED and not control.passed),
            "reference_score": control.score if control and control.status == GradeStatus.GRADED else None}


# --- Judge vs expert ----------------------------------------------------------------------------

def _number(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _agreement(rubric: RubricVersion, batch: RolloutBatch | None) -> dict:
    """Per criterion of the submitted rubric: the judge against the experts' marks; and each
    expert's ranking of the latest batch against the rubric's scores (tau-b, rho)."""
    rows = verification.agreement_rows(rubric=rubric)
    marks = sum(row["expert_marks"] for row in rows)
    rankings = []
    if batch is not None:
        labels = dict(batch.rollouts.values_list("pk", "index"))
        for ranking in Ranking.objects.filter(batch=batch).select_related("expert").order_by("updated_at", "id")[:5]:
            result = verification.ranking_agreement(batch=batch, user=ranking.expert, rubric_version=rubric)
            if result is None:
                continue
            rankings.append({
                "expert": ranking.expert, "tau": _number(result["tau"]), "rho": _number(result["rho"]), "warning": result["warning"],
                "ranked": len(result["points"]),
                "scatter": plots.scatter_plot(result["points"], {pk: f"Rollout {i + 1}" for pk, i in labels.items()})
                if result["points"] else None,
            })
    return {"rows": rows, "expert_marks": marks, "marked": marks > 0, "rankings": rankings,
            "verdicts_url": f"{reverse('batch-quality', args=[batch.pk])}?rubric={rubric.number}" if batch else ""}


# --- The world -----------------------------------------------------------------------------------

def values_only(preview: SafeString) -> SafeString:
    """The Drive's spreadsheet preview with each formula moved from its cell's text to the
    cell's tooltip: the cell reads as its value, as a spreadsheet shows it until the cell is
    selected. (The formula was escaped and sanitized with the rest; the sanitizer leaves quotes
    bare in text, so it is escaped again for the attribute.)"""
    return mark_safe(FORMULA_CELL.sub(lambda m: f'<td{m.group(1)} title="{escape(unescape(m.group(2)))}">', str(preview)))  # noqa: S308


def document_view(document: dict) -> dict:
    """A snapshot document (authoring.services.env_task_snapshot) as the replica apps show
    it: the same sanitized preview as the Drive's viewer (authoring.rendering.preview_html),
    so a spreadsheet is a table of computed values in their number formats, not its source
    text (its formulas are in the cells' tooltips)."""
    kind, fmt = document.get("kind", DocumentKind.FILE), document.get("format", "")
    empty = not (document.get("content") or "").strip()
    preview: SafeString | str = "" if empty and kind == DocumentKind.FILE else preview_html(
        kind, fmt, document.get("content") or "", document.get("metadata") or {})
    if preview and kind == DocumentKind.FILE and fmt == "xlsx":
        preview = values_only(preview)
    return {"path": document.get("path", ""), "kind": kind, "format": fmt,
            "type": document_type(kind, fmt),
            "brief": document.get("brief", ""), "status": document.get("status", ""), "empty": empty, "preview": preview,
            "anchor": document_anchor(document.get("path", ""))}


def _world(submission: Submission) -> dict:
    world = submission.snapshot.get("world", {})
    documents = world.get("documents", [])
    world_id = submission.env_task.world_id
    apps = []
    for app, name, kind, noun in APPS:
        count = sum(1 for d in documents if d.get("kind") == kind)
        apps.append({"key": app, "name": name, "count": count, "noun": noun,
                     "url": reverse(f"replica-{app}", args=["worlds", world_id])})
    drive = reverse("replica-drive", args=["worlds", world_id])
    shown = [document_view(d) | {"app_url": f"{drive}?path={d.get('path', '')}" if d.get("kind") == DocumentKind.FILE else
                                 next(a["url"] for a in apps if a["key"] == KIND_APP.get(d.get("kind"), "drive"))}
             for d in documents[:MAX_DOCUMENTS_SHOWN]]
    return {"id": world_id, "title": world.get("title", ""), "outline": world.get("outline", ""), "facts": world.get("facts", []),
            "apps": apps, "documents": shown, "total": len(documents),
            "hidden": max(len(documents) - MAX_DOCUMENTS_SHOWN, 0)}


# --- Earlier versions -------------------------------------------------------------------------------

def _earlier(submission: Submission) -> list[dict]:
    """The task's earlier versions, newest first, each with its reviews (and their checklist
    answers) and the admin's adjudication, if any."""
    reviews = Prefetch("reviews", queryset=Review.objects.select_related("reviewer").prefetch_related("answers")
                       .order_by("created_at", "id"))
    earlier = (Submission.objects.filter(env_task_id=submission.env_task_id, number__lt=submission.number).defer("snapshot")
               .select_related("adjudication", "adjudication__admin", "submitted_by").prefetch_related(reviews).order_by("-number"))
    return [{"submission": s, "reviews": list(s.reviews.all()), "adjudication": getattr(s, "adjudication", None)} for s in earlier]
