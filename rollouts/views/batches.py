"""Trial runs on the task page, the live batch page, cancel, and two trajectories side by side."""

from django.contrib import messages
from django.db.models import Case, CharField, Q, QuerySet, Value, When
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.selectors import membership_for
from authoring.models import EnvTask
from authoring.selectors import env_task_get_for_user, task_input_files_frozen
from core.exceptions import ApplicationError
from core.listing import Listing, ListSpec, list_page
from core.views import render_error
from llm.selectors import endpoint_picker
from rollouts import selectors, services
from rollouts.forms import CompareForm, RunTrialsForm
from rollouts.models import RolloutBatch, RolloutStatus
from rollouts.views.common import form_error
from rollouts.views.display import (
    add_grades,
    batch_list_with_counts,
    batch_row_counts,
    batch_row_unfinished,
    batch_state,
    changes_view,
    decorate_steps,
    money,
    progress_view,
    rollout_rows,
    seconds,
    tokens,
)
from workspace.selectors import overlay_diff

TRIALS = "rollouts/task_trials.html"
TRIALS_PAGE = "rollouts/task_trials_page.html"
BATCH = "rollouts/batch_detail.html"
COMPARE = "rollouts/batch_compare.html"
BATCHES_PER_PAGE = 20
BATCH_STATES = (("running", "Running"), ("finished", "Finished"), ("cancelled", "Cancelled"))
SCRIPTED = (("yes", "Scripted sample model"), ("no", "Real models"))
# The task's batches: 20 a page, newest first unless the author asks otherwise.
BATCH_LIST = ListSpec(
    sorts={"created": ("created_at", "id"), "n": ("total", "created_at", "id"), "status": ("state", "created_at", "id")},
    default_sort="-created",
    filters={"status": ("state", [v for v, _ in BATCH_STATES]), "scripted": ("scripted", [v for v, _ in SCRIPTED])},
    per_page=BATCHES_PER_PAGE,
)
GRADE_RESULTS = (("passed", "Passed"), ("failed", "Failed"))
ROLLOUT_SORTS = (
    ("number", "By number"), ("-score", "Highest score first"), ("score", "Lowest score first"),
    ("-cost", "Dearest first"), ("cost", "Cheapest first"), ("-duration", "Slowest first"), ("duration", "Quickest first"),
)
# A batch's rollouts (64 at most: one page): by number unless sorted by score, cost or time taken.
ROLLOUT_LIST = ListSpec(
    sorts={"number": ("index",), "score": ("grade_score", "index"), "cost": ("cost", "index"), "duration": ("duration", "index")},
    default_sort="number",
    filters={"status": ("status", RolloutStatus.values), "grade": ("grade_result", [v for v, _ in GRADE_RESULTS])},
    per_page=64,
)


# --- The trials panel of the task page --------------------------------------------------

def _trials_context(request: HttpRequest, env_task: EnvTask, form: RunTrialsForm | None = None) -> dict:
    membership = membership_for(user=request.user, project_id=env_task.project_id)
    endpoints = endpoint_picker(project_id=env_task.project_id)  # starts on the last model that worked here
    listing = list_page(request, _batch_rows(selectors.batch_list_for_task(user=request.user, env_task=env_task)), BATCH_LIST)
    batches = listing.rows
    for batch in batches:
        batch.status_counts = batch_row_counts(batch)
        batch.is_unfinished = batch_row_unfinished(batch)
    return {
        "env_task": env_task,
        "can_author": membership.can_author,
        "endpoints": endpoints,
        "has_scripted": any(e.is_scripted for e in endpoints),
        "form": form or RunTrialsForm(initial={"endpoint": next((e for e in endpoints if e.is_default), None)}),
        "batches": batches,
        "batch_list": listing,
        "batch_states": BATCH_STATES,
        "scripted_choices": SCRIPTED,
        "any_unfinished": any(b.is_unfinished for b in batches),
    }


def _batch_rows(batches: QuerySet[RolloutBatch]) -> QuerySet[RolloutBatch]:
    """With their rollout counts, a `state` (cancelled, running while any rollout waits or
    runs, else finished) and `scripted` ("yes"/"no"): what the list sorts and filters by."""
    # The list never shows a batch's frozen task or system prompt: left unread.
    batches = batches.select_related("created_by").defer("task_snapshot", "system_prompt")
    return batch_list_with_counts(batches).annotate(
        state=Case(
            When(cancelled_at__isnull=False, then=Value("cancelled")),
            When(Q(n_running__gt=0) | Q(n_queued__gt=0), then=Value("running")),
            default=Value("finished"),
            output_field=CharField(),
        ),
        scripted=Case(When(endpoint_scripted=True, then=Value("yes")), default=Value("no"), output_field=CharField()),
    )


@require_http_methods(["GET", "POST"])
def task_trials(request: HttpRequest, task_pk: int) -> HttpResponse:
    """The trials panel (loaded into the task page by htmx, as reviews' panel is), and
    "Run trials": a started batch opens its live page."""
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    if request.method == "GET":
        # The polled list and its page / sort / filter links swap only the list.
        batches_only = request.GET.get("part") == "batches" or (request.htmx and request.htmx.target == "trials-batches")
        if batches_only:
            return render(request, TRIALS + "#trials-batches", _trials_context(request, env_task))
        # A link opened on its own (a new tab, a bookmark) gets the panel in a page of its own.
        return render(request, TRIALS if request.htmx else TRIALS_PAGE, _trials_context(request, env_task))
    form = RunTrialsForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        data = form.cleaned_data
        batch = services.rollout_batch_start(
            env_task=env_task, user=request.user, endpoint=data["endpoint"], n=data["n"], temperature=data["temperature"],
            max_steps=data["max_steps"], max_output_tokens=data["max_output_tokens"], time_limit_seconds=data["time_limit_seconds"],
            system_prompt=data["system_prompt"], mode=data["mode"],
        )
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect(reverse("task-editor", args=[env_task.pk]) + "#task-trials")
        return render_error(request, TRIALS + "#trials-form", _trials_context(request, env_task, form=form), error)
    url = reverse("batch-detail", args=[batch.pk])
    if request.htmx:
        # A new batch is a new screen: htmx follows HX-Redirect to its live page.
        response = HttpResponse(status=200)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


# --- The batch page ---------------------------------------------------------------------

def _live_context(request: HttpRequest, batch: RolloutBatch) -> dict:
    progress = progress_view(selectors.batch_progress(batch=batch))
    state_class, state_label = batch_state(batch, progress)
    membership = membership_for(user=request.user, project_id=batch.project_id)
    listing = list_page(request, selectors.batch_rollouts_listed(batch=batch), ROLLOUT_LIST)
    rollouts = rollout_rows(batch, listing.page.object_list)
    graded_by, grades = selectors.batch_latest_grades(batch=batch)
    return {
        "rollout_list": listing,
        "live_query": _live_query(listing),
        "rollout_statuses": RolloutStatus.choices,
        "grade_results": GRADE_RESULTS,
        "rollout_sorts": ROLLOUT_SORTS,
        "batch": batch,
        "progress": progress,
        "state_class": state_class,
        "state_label": state_label,
        "rollouts": add_grades(rollouts, grades),
        "graded_by": graded_by,
        "can_author": membership.can_author,
    }


def _live_query(listing: Listing) -> str:
    """What the polled partial asks for: the same sort and filters."""
    return listing.query.removeprefix("&")


def _batch_context(request: HttpRequest, batch: RolloutBatch) -> dict:
    env_task = batch.env_task
    context = _live_context(request, batch)
    return {
        **context,
        "env_task": env_task,
        "world": env_task.world,
        "project": env_task.world.project,
        "snapshot": batch.task_snapshot,
        "task_changed": env_task.revision != batch.task_snapshot.get("revision"),
        # (a batch started before tasks had input files recorded none: nothing to compare)
        "input_files_changed": "input_files" in batch.task_snapshot
        and batch.task_snapshot["input_files"] != task_input_files_frozen(env_task=env_task),
        "rubric_criteria": list(batch.rubric_version.criteria.all()),
        "created_by": batch.created_by.username if batch.created_by else "",
        "time_limit_label": seconds(batch.time_limit_seconds * 1000),
        "compare_choices": list(range(1, context["progress"]["total"] + 1)),
    }


@require_GET
def batch_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The live view. htmx polls the #batch-live part every 2 s until the batch is over."""
    batch = selectors.batch_get_for_user(user=request.user, pk=pk)
    if request.htmx:
        return render(request, BATCH + "#batch-live", _live_context(request, batch))
    batch = RolloutBatch.objects.select_related("env_task__world__project", "rubric_version", "created_by").get(pk=batch.pk)
    return render(request, BATCH, _batch_context(request, batch))


@require_POST
def batch_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    batch = selectors.batch_get_for_user(user=request.user, pk=pk)
    try:
        services.rollout_batch_cancel(batch=batch, user=request.user)
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect("batch-detail", pk=batch.pk)
        return render_error(request, BATCH + "#batch-live", _live_context(request, batch), error)
    batch.refresh_from_db()
    if not request.htmx:
        messages.success(request, "Cancelled: queued rollouts will not start; running ones stop after their current step.")
        return redirect("batch-detail", pk=batch.pk)
    return render(request, BATCH + "#batch-live", _live_context(request, batch))


# --- Two trajectories side by side --------------------------------------------------------

def _column(request: HttpRequest, rollout) -> dict:
    steps = decorate_steps(list(selectors.rollout_steps(rollout=rollout)), rollout)
    return {
        "rollout": rollout,
        "number": rollout.index + 1,
        "steps": steps,
        "changes": changes_view(overlay_diff(overlay=rollout.overlay, env_task_id=rollout.batch.env_task_id)) if rollout.overlay_id else [],
        "tokens_label": f"{tokens(rollout.input_tokens)} in / {tokens(rollout.output_tokens)} out",
        "cost_label": money(rollout.cost),
    }


@require_GET
def batch_compare(request: HttpRequest, pk: int) -> HttpResponse:
    """Two rollouts of the batch (?a=1&b=2, their numbers in it) in two columns."""
    batch = selectors.batch_get_for_user(user=request.user, pk=pk)
    batch = RolloutBatch.objects.select_related("env_task__world__project").get(pk=batch.pk)
    by_number = {r.index + 1: r for r in batch.rollouts.select_related("overlay").order_by("index")}
    form = CompareForm(request.GET)
    a = b = None
    if form.is_valid():
        a, b = form.cleaned_data["a"], form.cleaned_data["b"]
    a = a or 1
    b = b or (2 if len(by_number) > 1 else 1)
    error = ""
    if a not in by_number or b not in by_number:
        error = f"This batch has rollouts 1 to {len(by_number)}; showing the first two."
        a, b = 1, min(2, len(by_number))
    columns = [_column(request, by_number[number]) for number in (a, b)]
    context = {
        "batch": batch,
        "env_task": batch.env_task,
        "world": batch.env_task.world,
        "project": batch.env_task.world.project,
        "columns": columns,
        "a": a,
        "b": b,
        "choices": list(by_number),
        "compare_error": error,
        "any_running": any(not c["rollout"].is_finished for c in columns),
        "can_author": membership_for(user=request.user, project_id=batch.project_id).can_author,
    }
    return render(request, COMPARE, context)
