"""The batch quality page: every rollout's grade with the judge's verdicts, the expert's own
calls, the expert's ranking against the rubric's scores, and regrading with what changed."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.selectors import membership_get
from authoring.selectors import rubric_version_current
from core.exceptions import ApplicationError
from core.views import render_error, render_with_error
from rollouts import selectors as rollout_selectors
from rollouts.grading.services import batch_failed_grades_retry, batch_grading_cancel, batch_regrade
from rollouts.models import ExpertVerdict, GradeStatus, RolloutBatch, Verdict
from verification import selectors
from verification.expert_labels import expert_ceiling
from verification.forms import ExpertVerdictForm, QualityQueryForm, RankingForm
from verification.selectors import LOW_AGREEMENT, ranking_agreement
from verification.services import expert_verdict_set, ranking_set
from verification.views import plots
from verification.views.common import form_error, with_trigger

PAGE = "verification/batch_quality.html"


def _roles(request: HttpRequest, batch: RolloutBatch) -> dict:
    membership = membership_get(user=request.user, project_id=batch.project_id)
    return {"can_author": membership.can_author, "can_judge": membership.can_author or membership.can_review}


def _grading_context(request: HttpRequest, batch: RolloutBatch, rubric_number: int | None = None, vs_number: int | None = None) -> dict:
    rubric, versions = selectors.grading_rubric(batch=batch, number=rubric_number)
    rows = selectors.grade_rows(batch=batch, rubric=rubric, user=request.user)
    previous = selectors.previous_version(versions, rubric, vs_number)
    current = rubric_version_current(env_task=batch.env_task)
    result = selectors.batch_difficulty(batch=batch, rubric=rubric)
    return {
        "batch": batch,
        "rubric": rubric,
        "versions": versions,
        "grade_rows": rows,
        "summary": selectors.grade_summary([r["grade"] for r in rows], rollouts=len(rows)),
        "difficulty": result,
        "pass1": result["curve"][0][1] if result["curve"] else None,
        "changes": selectors.grade_changes(batch=batch, old=previous, new=rubric) if previous else None,
        "current_rubric": current,
        "can_regrade_to": current if current and current.pk not in {v.pk for v in versions} and current.criteria.exists() else None,
        "grades_pending": any(r["pending"] for r in rows),
        **_roles(request, batch),
    }


def _agreement_context(request: HttpRequest, batch: RolloutBatch, rubric_number: int | None = None) -> dict:
    rubric, _ = selectors.grading_rubric(batch=batch, number=rubric_number)
    ceiling = expert_ceiling(rubric_version=rubric)
    return {
        "batch": batch,
        "rubric": rubric,
        "agreement_rows": selectors.agreement_rows(rubric=rubric, ceiling=ceiling),
        "expert_ceiling": ceiling,
    }


def _ranking_context(request: HttpRequest, batch: RolloutBatch, rubric_number: int | None = None) -> dict:
    rubric, _ = selectors.grading_rubric(batch=batch, number=rubric_number)
    items, saved = selectors.ranking_items(batch=batch, user=request.user)
    agreement = ranking_agreement(batch=batch, user=request.user, rubric_version=rubric) if saved else None
    labels = {r.pk: f"Rollout {r.index + 1}" for r in items}
    return {
        "batch": batch,
        "rubric": rubric,
        "ranking_items": items,
        "ranking_saved": saved,
        "agreement": agreement,
        "scatter": plots.scatter_plot(agreement["points"], labels) if agreement and agreement["points"] else None,
        "low_agreement": LOW_AGREEMENT,
        **_roles(request, batch),
    }


def _page_context(request: HttpRequest, batch: RolloutBatch, rubric_number: int | None, vs_number: int | None) -> dict:
    env_task = batch.env_task
    return {
        **_grading_context(request, batch, rubric_number, vs_number),
        **_agreement_context(request, batch, rubric_number),
        **_ranking_context(request, batch, rubric_number),
        "env_task": env_task,
        "world": env_task.world,
        "project": env_task.world.project,
    }


def _batch(request: HttpRequest, pk: int) -> RolloutBatch:
    batch = rollout_selectors.batch_get_for_user(user=request.user, pk=pk)
    return RolloutBatch.objects.select_related("env_task__world__project", "rubric_version").get(pk=batch.pk)


def _page_url(batch: RolloutBatch, rubric_number: int | None = None, anchor: str = "") -> str:
    url = reverse("batch-quality", args=[batch.pk])
    return url + (f"?rubric={rubric_number}" if rubric_number else "") + (f"#{anchor}" if anchor else "")


@require_GET
def batch_quality(request: HttpRequest, pk: int) -> HttpResponse:
    """?rubric=<n> shows another graded version's grades, ?vs=<n> compares with another.
    htmx asks for one part (?part=grading|agreement|ranking); the grading part is polled
    while grades are pending and, once they are all in, tells the others to reload."""
    batch = _batch(request, pk)
    query = QualityQueryForm(request.GET)
    rubric_number, vs_number = query.value("rubric"), query.value("vs")
    part = request.GET.get("part") if request.htmx else None
    if part == "grading":
        context = _grading_context(request, batch, rubric_number, vs_number)
        response = render(request, PAGE + "#q-grading", context)
        if request.GET.get("poll") and not context["grades_pending"]:
            with_trigger(response, "grades-settled")
        return response
    if part == "agreement":
        return render(request, PAGE + "#q-agreement", _agreement_context(request, batch, rubric_number))
    if part == "ranking":
        return render(request, PAGE + "#q-ranking", _ranking_context(request, batch, rubric_number))
    return render(request, PAGE, _page_context(request, batch, rubric_number, vs_number))


@require_POST
def batch_expert_verdict(request: HttpRequest, pk: int) -> HttpResponse:
    """The expert's call on one criterion of one trajectory: met, not met, or back to
    agreeing with the judge. Answers the toggle's cell; the agreement table reloads."""
    batch = _batch(request, pk)
    form = ExpertVerdictForm(request.POST)
    rubric_number = QualityQueryForm(request.POST).value("rubric")
    if not form.is_valid():
        return render_error(request, "_error.html", {}, form_error(form))
    rollout = selectors.batch_rollout(batch=batch, pk=form.cleaned_data["rollout"])
    criterion = selectors.task_criterion(env_task_id=batch.env_task_id, pk=form.cleaned_data["criterion"])
    verdict = Verdict.objects.filter(grade__rollout=rollout, criterion=criterion).select_related("grade").first()
    mine = ExpertVerdict.objects.filter(rollout=rollout, criterion=criterion, expert=request.user).first()
    number = list(criterion.rubric_version.criteria.values_list("pk", flat=True)).index(criterion.pk) + 1
    cell = {"criterion": criterion, "number": number, "verdict": verdict, "expert": mine.met if mine else None, "expert_from": None}
    context = {"batch": batch, "row": {"rollout": rollout, "number": rollout.index + 1}, "cell": cell, "rubric_number": rubric_number,
               **_roles(request, batch)}
    try:
        saved = expert_verdict_set(rollout=rollout, criterion=criterion, user=request.user, met=form.met(), note=form.cleaned_data["note"])
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect(_page_url(batch, rubric_number, f"q-rollout-{rollout.index + 1}"))
        return render_with_error(request, PAGE + "#q-verdict", {**context, "verdict_error": error.message}, error)
    if not request.htmx:
        return redirect(_page_url(batch, rubric_number, f"q-rollout-{rollout.index + 1}"))
    cell["expert"] = saved.met if saved else None
    return with_trigger(render(request, PAGE + "#q-verdict", context), "expert-verdicts-changed")


@require_POST
def batch_ranking(request: HttpRequest, pk: int) -> HttpResponse:
    """Save the expert's order of the completed trajectories (each up/down saves it)."""
    batch = _batch(request, pk)
    form = RankingForm(request.POST)
    rubric_number = QualityQueryForm(request.POST).value("rubric")
    try:
        if not form.is_valid():
            raise form_error(form)
        try:
            order = form.order()
        except ValidationError as error:
            raise ApplicationError(" ".join(error.messages)) from None
        ranking_set(batch=batch, user=request.user, order=order)
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect(_page_url(batch, rubric_number, "q-ranking"))
        return render_error(request, PAGE + "#q-ranking", _ranking_context(request, batch, rubric_number), error)
    if not request.htmx:
        return redirect(_page_url(batch, rubric_number, "q-ranking"))
    return render(request, PAGE + "#q-ranking", _ranking_context(request, batch, rubric_number))


@require_POST
def batch_regrade_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Grade the batch's completed rollouts against the task's current rubric version. The
    page then shows the new grades (polled until they are in) and what changed."""
    batch = _batch(request, pk)
    try:
        grades = batch_regrade(batch=batch, user=request.user)
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect(_page_url(batch, anchor="q-grading"))
        return render_error(request, PAGE + "#q-grading", _grading_context(request, batch), error)
    if not request.htmx:
        queued = sum(1 for g in grades if g.status in (GradeStatus.QUEUED, GradeStatus.RUNNING))
        if grades:
            messages.success(request, f"Regrading {len(grades)} trajector{'y' if len(grades) == 1 else 'ies'} with rubric version "
                                      f"{grades[0].rubric_version.number}: {queued} queued for grading; "
                                      "the grades fill in below as they come.")
        else:
            messages.info(request, "No completed trajectory to regrade.")
        return redirect(_page_url(batch, anchor="q-grading"))
    response = render(request, PAGE + "#q-grading", _grading_context(request, batch))
    response["HX-Push-Url"] = reverse("batch-quality", args=[batch.pk])
    return with_trigger(response, "grades-changed")


def _grading_action(request: HttpRequest, pk: int, act, said) -> HttpResponse:
    """A POST on the grading of the rubric version the page shows (`rubric` in the form):
    `act(batch, rubric)` is the service call, `said(result)` the (level, message) a plain
    form is redirected with; htmx gets the grading part, which then polls or says what was done."""
    batch = _batch(request, pk)
    rubric_number = QualityQueryForm(request.POST).value("rubric")
    rubric, _ = selectors.grading_rubric(batch=batch, number=rubric_number)
    try:
        result = act(batch, rubric)
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect(_page_url(batch, rubric_number, "q-grading"))
        return render_error(request, PAGE + "#q-grading", _grading_context(request, batch, rubric_number), error)
    if not request.htmx:
        level, message = said(result)
        messages.add_message(request, level, message)
        return redirect(_page_url(batch, rubric_number, "q-grading"))
    return with_trigger(render(request, PAGE + "#q-grading", _grading_context(request, batch, rubric_number)), "grades-changed")


@require_POST
def batch_retry_failed_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Send the failed and the cancelled grades to the grader again; the grading part then polls until they are in."""
    def said(grades):
        if not grades:
            return messages.INFO, "No failed or cancelled grade to grade again."
        plural = "" if len(grades) == 1 else "s"
        return messages.SUCCESS, f"Grading {len(grades)} failed or cancelled grade{plural} again; the grades fill in below as they come."

    return _grading_action(
        request, pk, lambda batch, rubric: batch_failed_grades_retry(batch=batch, user=request.user, rubric_version=rubric), said,
    )


@require_POST
def batch_grading_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel the grading: the grades not in yet are not graded; the grading part then says how many were."""
    return _grading_action(
        request, pk, lambda batch, rubric: batch_grading_cancel(batch=batch, user=request.user, rubric_version=rubric),
        lambda cancelled: (messages.SUCCESS, f"Grading cancelled: {cancelled} grade{'' if cancelled == 1 else 's'} not graded."),
    )
