"""The Verifier panel of the task page (loaded by htmx, as the reviews and trials panels
are; also a page of its own): difficulty of the latest batch, score distribution,
judge-vs-expert agreement per criterion, the rubric's grading settings, the judge prompt,
and reward-hacking probes."""

from urllib.parse import urlparse

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.selectors import membership_get
from authoring import services as authoring_services
from authoring.models import EnvTask, GraderKind
from authoring.selectors import env_task_get_for_user, rubric_version_current
from core.exceptions import ApplicationError
from core.views import render_error
from llm.selectors import endpoint_default, endpoint_list_usable
from verification import selectors
from verification.forms import ProbeRunForm, QualityQueryForm, RubricSettingsForm
from verification.services import probe_run_cancel, probe_run_start
from verification.views import plots
from verification.views.common import form_error, with_trigger

PANEL = "verification/task_verifier.html"


def _roles(request: HttpRequest, env_task: EnvTask) -> dict:
    membership = membership_get(user=request.user, project_id=env_task.project_id)
    # On the task page the rubric's rows are beside the panel: a fooled criterion opens for editing in place.
    on_task_page = bool(request.htmx) and urlparse(request.htmx.current_url or "").path == reverse("task-editor", args=[env_task.pk])
    return {
        "can_author": membership.can_author,
        "can_edit_rubric": membership.can_author and env_task.is_editable,
        "on_task_page": on_task_page,
    }


def _difficulty_context(request: HttpRequest, env_task: EnvTask) -> dict:
    batch = selectors.batch_latest_for_task(user=request.user, env_task=env_task)
    context = {"env_task": env_task, "batch": batch, **_roles(request, env_task)}
    if batch is None:
        return context
    rubric, _ = selectors.grading_rubric(batch=batch)
    result = selectors.batch_difficulty(batch=batch, rubric=rubric)
    current = rubric_version_current(env_task=env_task)
    unfinished = batch.rollouts.filter(status__in=["queued", "running"]).exists()
    return {
        **context,
        "rubric": rubric,
        "difficulty": result,
        "pass1": result["curve"][0][1] if result["curve"] else None,
        "curve_plot": plots.pass_at_k_plot(result["curve"]) if result["curve"] else None,
        "histogram": plots.histogram_plot(
            selectors.batch_scores(batch=batch, rubric=rubric), threshold=None if rubric.all_must_pass else rubric.pass_threshold
        ),
        "current_rubric": current,
        "rubric_is_stale": current is not None and current.pk != rubric.pk and current.criteria.exists(),
        "keep_polling": unfinished or result["pending"] > 0,
    }


def _agreement_context(request: HttpRequest, env_task: EnvTask) -> dict:
    rows, graded = selectors.agreement_for_current(env_task=env_task)
    return {"env_task": env_task, "agreement_rows": rows, "agreement_rubric": graded}


def _settings_context(request: HttpRequest, env_task: EnvTask, form: RubricSettingsForm | None = None, **extra) -> dict:
    rubric = rubric_version_current(env_task=env_task)
    if form is None and rubric is not None:
        form = RubricSettingsForm(initial={
            "pass_threshold": rubric.pass_threshold, "all_must_pass": rubric.all_must_pass, "judge_samples": rubric.judge_samples,
            "revision": rubric.revision,
        })
    return {"env_task": env_task, "settings_rubric": rubric, "settings_form": form, **_roles(request, env_task), **extra}


def _judge_prompt_context(request: HttpRequest, env_task: EnvTask, criterion_pk: int | None = None) -> dict:
    rubric = rubric_version_current(env_task=env_task)
    criteria = list(rubric.criteria.all()) if rubric else []
    chosen = next((c for c in criteria if c.pk == criterion_pk), None) or next(
        (c for c in criteria if c.grader_kind == GraderKind.LLM_JUDGE), criteria[0] if criteria else None
    )
    batch = selectors.batch_latest_for_task(user=request.user, env_task=env_task)
    prompt = selectors.judge_prompt(env_task=env_task, criterion=chosen, batch=batch) if chosen else None
    return {"env_task": env_task, "prompt_criteria": criteria, "prompt": prompt, "prompt_batch": batch}


def _probes_context(request: HttpRequest, env_task: EnvTask, form: ProbeRunForm | None = None) -> dict:
    run = selectors.probe_run_latest(env_task=env_task)
    current = rubric_version_current(env_task=env_task)
    rows = selectors.probe_rows(run=run, current=list(current.criteria.all()) if current else []) if run else []
    if form is None:
        batch = selectors.batch_latest_for_task(user=request.user, env_task=env_task)
        judge = (batch.judge_endpoint_id or batch.endpoint_id) if batch else None
        # (the task's last judge, unless it fails: then the model last used successfully in the project)
        judge = endpoint_default(project_id=env_task.project_id, prefer=judge)
        form = ProbeRunForm(initial={"judge_endpoint": judge} if judge else None)
    cheats_pending = run is not None and selectors.probe_cheats_pending(run)
    return {
        "env_task": env_task,
        "probe_run": run,
        "probe_rows": rows,
        "probe_form": form,
        "flag_score": run.flag_score if run else settings.PROBE_FLAG_SCORE,  # (what a new run starts from)
        "flagged_count": sum(1 for r in rows if r["flagged"]),
        "probe_progress": selectors.probe_progress(run=run, rows=rows) if run else None,
        "probe_rubric": current,
        "control_row": next((r for r in rows if r["control"]), None),
        "probe_status": selectors.probe_status(env_task=env_task, rubric_version=current, rows=rows if run else None),
        "probe_summary": selectors.probe_summary(rows),
        # Polled while a cheat is being written or a grade is pending; rendered without the trigger once all is in.
        "probes_pending": cheats_pending or any(r["pending"] for r in rows),
        "cheats_pending": cheats_pending,
        "probe_rubric_is_stale": bool(run and current and current.pk != run.rubric_version_id),
        "endpoints": list(endpoint_list_usable()),
        **_roles(request, env_task),
    }


def _panel_context(request: HttpRequest, env_task: EnvTask, criterion_pk: int | None = None) -> dict:
    return {
        **_difficulty_context(request, env_task),
        **_agreement_context(request, env_task),
        **_settings_context(request, env_task),
        **_judge_prompt_context(request, env_task, criterion_pk),
        **_probes_context(request, env_task),
        "project": env_task.project,
        "world": env_task.world,
    }


PARTS = {"difficulty": _difficulty_context, "probes": _probes_context, "agreement": _agreement_context}


@require_GET
def task_verifier(request: HttpRequest, task_pk: int) -> HttpResponse:
    """The panel (htmx, into the task page), one of its polled parts (?part=difficulty|probes),
    or the same panel as a page of its own."""
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    part = request.GET.get("part")
    if request.htmx and part in PARTS:
        return render(request, f"{PANEL}#q-{part}", PARTS[part](request, env_task))
    query = QualityQueryForm(request.GET)
    context = _panel_context(request, env_task, query.value("criterion"))
    return render(request, PANEL + ("#verifier-panel" if request.htmx else ""), context)


@require_GET
def task_judge_prompt(request: HttpRequest, task_pk: int) -> HttpResponse:
    """The judge's messages for one criterion (?criterion=<id>), exactly as the judge gets them."""
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    criterion = QualityQueryForm(request.GET).value("criterion")
    if not request.htmx:
        return redirect(f"{reverse('task-verifier', args=[env_task.pk])}?criterion={criterion or ''}#q-judge-prompt")
    return render(request, PANEL + "#q-judge-prompt", {**_judge_prompt_context(request, env_task, criterion), "prompt_open": True})


@require_POST
def task_rubric_settings(request: HttpRequest, task_pk: int) -> HttpResponse:
    """Save the pass threshold, all-must-pass and judge samples (a frozen rubric gets a new
    version). The task page's rubric refreshes itself on the `rubric-settings-changed` event."""
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    form = RubricSettingsForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        data = form.cleaned_data
        before = rubric_version_current(env_task=env_task)
        rubric = authoring_services.rubric_settings_update(
            env_task=env_task, user=request.user, base_revision=data["revision"], pass_threshold=data["pass_threshold"],
            all_must_pass=data["all_must_pass"], judge_samples=data["judge_samples"],
        )
    except ApplicationError as error:
        if not request.htmx:
            return render_error(
                request,
                PANEL,
                {**_panel_context(request, env_task), **_settings_context(request, env_task, form, error_in="settings")},
                error,
            )
        return render_error(request, PANEL + "#q-settings", _settings_context(request, env_task, form, error_in="settings"), error)
    if not request.htmx:
        return redirect(reverse("task-editor", args=[env_task.pk]) + "#q-settings")
    saved = (
        "Saved."
        if before is None or before.pk == rubric.pk
        else f"Saved as rubric version {rubric.number} (version {before.number} has graded trials and stays as it was)."
    )
    response = render(request, PANEL + "#q-settings", _settings_context(request, env_task, saved=saved))
    return with_trigger(response, "rubric-settings-changed")


@require_http_methods(["GET", "POST"])
def task_probes(request: HttpRequest, task_pk: int) -> HttpResponse:
    """GET: the probes part (polled while the cheats are written and the grades pending).
    POST: run the suite of adversarial answers against the current rubric; the cheats a
    model writes are written on the grading queue, not in this request."""
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    if request.method == "GET":
        if not request.htmx:
            return redirect(reverse("task-verifier", args=[env_task.pk]) + "#q-probes")
        return render(request, PANEL + "#q-probes", _probes_context(request, env_task))
    form = ProbeRunForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        probe_run_start(env_task=env_task, user=request.user, judge_endpoint=form.cleaned_data["judge_endpoint"],
                        cheat_endpoint=form.cleaned_data["cheat_endpoint"], cheats_per_kind=form.cleaned_data.get("cheats_per_kind"),
                        flag_score=form.cleaned_data.get("flag_score"))
    except ApplicationError as error:
        if not request.htmx:
            return render_error(
                request,
                PANEL,
                {**_panel_context(request, env_task), **_probes_context(request, env_task, form), "error_in": "probes"},
                error,
            )
        return render_error(request, PANEL + "#q-probes", {**_probes_context(request, env_task, form), "error_in": "probes"}, error)
    if not request.htmx:
        return redirect(reverse("task-editor", args=[env_task.pk]) + "#q-probes")
    return render(request, PANEL + "#q-probes", _probes_context(request, env_task))


@require_POST
def task_probes_cancel(request: HttpRequest, task_pk: int) -> HttpResponse:
    """Cancel the task's latest probe run (the one the page shows): the probes already graded
    are kept, the others are not graded; the probes part then says Cancelled and how many."""
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    run = selectors.probe_run_latest(env_task=env_task)
    try:
        if run is None:
            raise ApplicationError("This task has no probe run to cancel.")
        probe_run_cancel(run=run, user=request.user)
    except ApplicationError as error:
        if not request.htmx:
            return render_error(request, PANEL, {**_panel_context(request, env_task), "error_in": "probes"}, error)
        return render_error(request, PANEL + "#q-probes", {**_probes_context(request, env_task), "error_in": "probes"}, error)
    if not request.htmx:
        return redirect(reverse("task-editor", args=[env_task.pk]) + "#q-probes")
    return render(request, PANEL + "#q-probes", _probes_context(request, env_task))
