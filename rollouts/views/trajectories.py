"""The trajectory viewer: one rollout step by step, live while it runs, with the judge's
verdicts beside it; a model step's exact request and response; comments on steps; a rubric
criterion made from a step, with the step as its evidence."""

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.selectors import membership_for
from authoring import services as authoring_services
from authoring.selectors import rubric_version_current
from core.exceptions import ApplicationError
from core.views import render_error
from rollouts import selectors, services
from rollouts.agent import conversation_before
from rollouts.forms import StepCommentForm, StepCriterionForm
from rollouts.models import BatchMode, Rollout, Step, StepKind
from rollouts.views.common import form_error
from rollouts.views.display import changes_view, decorate_steps, money, seconds, tokens
from rollouts.views.step_prefill import criterion_prefill
from rollouts.views.verdicts import step_exchange, verdict_panel
from workspace.selectors import overlay_diff
from workspace.tools import tool_specs

ROLLOUT = "rollouts/rollout_detail.html"
STEP = "rollouts/_step.html"
CRITERION = "rollouts/step_criterion.html"
EXCHANGE = "rollouts/step_exchange.html"


def _roles(request: HttpRequest, project_id: int) -> dict:
    membership = membership_for(user=request.user, project_id=project_id)
    return {"can_author": membership.can_author, "can_comment": membership.can_author or membership.can_review}


def _summary_context(rollout: Rollout) -> dict:
    duration = ""
    if rollout.started_at and rollout.finished_at:
        duration = seconds((rollout.finished_at - rollout.started_at).total_seconds() * 1000)
    return {
        "rollout": rollout,
        "batch": rollout.batch,
        "number": rollout.index + 1,
        "tokens_label": f"{tokens(rollout.input_tokens)} in / {tokens(rollout.output_tokens)} out",
        "cost_label": money(rollout.cost),
        "duration_label": duration,
        "step_count": rollout.steps.count(),
    }


def _outcome_context(rollout: Rollout) -> dict:
    if not rollout.overlay_id:
        return {"changes": []}
    return {"changes": changes_view(overlay_diff(overlay=rollout.overlay, env_task_id=rollout.batch.env_task_id))}


def _verdicts_context(rollout: Rollout, steps: list[Step]) -> dict:
    has_criteria = rollout.batch.rubric_version.criteria.exists()
    grade = selectors.rollout_latest_grade(rollout=rollout) if has_criteria or rollout.grades.exists() else None
    return {
        "rollout": rollout,
        "batch": rollout.batch,
        **verdict_panel(rollout=rollout, grade=grade, steps=steps, has_criteria=has_criteria,
                        expert_verdicts=selectors.rollout_expert_verdicts(rollout=rollout, grade=grade)),
    }


@require_GET
def rollout_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The whole trajectory, with the judge's verdicts beside it. An htmx GET answers the
    summary (status, tokens, cost), which the page refreshes whenever the steps' poll reports
    progress; with ?part=verdicts, the verdict panel (it reloads itself until the grade is in)."""
    rollout = selectors.rollout_get_for_user(user=request.user, pk=pk)
    if request.htmx and request.GET.get("part") == "verdicts":
        steps = list(rollout.steps.order_by("index").only("pk", "index", "rollout_id"))
        return render(request, ROLLOUT + "#rollout-verdicts", _verdicts_context(rollout, steps))
    if request.htmx:
        return render(request, ROLLOUT + "#rollout-summary", _summary_context(rollout))
    steps = decorate_steps(list(selectors.rollout_steps(rollout=rollout)), rollout)
    batch = rollout.batch
    context = {
        **_summary_context(rollout),
        **_roles(request, batch.project_id),
        **(_outcome_context(rollout) if rollout.is_finished else {}),
        **_verdicts_context(rollout, steps),
        "env_task": batch.env_task,
        "world": batch.env_task.world,
        "project": batch.env_task.world.project,
        "steps": steps,
        "next_after": len(steps),
    }
    return render(request, ROLLOUT, context)


@require_GET
def step_exchange_view(request: HttpRequest, pk: int) -> HttpResponse:
    """A model step's exact request and response, as an inspector shows an API call: the
    page loads it into the step's "Show request and response" disclosure when it is opened
    (a plain GET answers a page of its own)."""
    step = selectors.step_get_for_user(user=request.user, pk=pk)
    if step.kind != StepKind.MODEL:
        raise Http404("Only a model step has a request and a response.")
    rollout = step.rollout
    batch = rollout.batch
    before = list(rollout.steps.filter(index__lt=step.index).order_by("index").defer("raw_response"))
    tools = tool_specs(writable=True) if batch.mode == BatchMode.TOOLS else None
    context = step_exchange(step=step, messages=conversation_before(rollout, before), tools=tools)
    if request.htmx:
        return render(request, EXCHANGE + "#step-exchange", context)
    env_task = batch.env_task
    return render(request, EXCHANGE, {**context, "rollout": rollout, "batch": batch, "env_task": env_task, "world": env_task.world,
                                      "project": env_task.world.project})


@require_GET
def rollout_steps(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled every 2 s while the rollout runs: the steps saved since `after`, then either
    the poller again or, once the rollout is over, its final answer and file changes."""
    rollout = selectors.rollout_get_for_user(user=request.user, pk=pk)
    after = request.GET.get("after", "0")
    after = int(after) if after.isascii() and after.isdigit() and len(after) < 9 else 0
    # The status is read before the steps: a finished rollout saved all of its steps first.
    finished = rollout.is_finished
    new_steps = decorate_steps(list(selectors.rollout_steps(rollout=rollout).filter(index__gte=after)), rollout)
    context = {
        **_roles(request, rollout.batch.project_id),
        **(_outcome_context(rollout) if finished else {}),
        "rollout": rollout,
        "batch": rollout.batch,
        "new_steps": new_steps,
        "next_after": new_steps[-1].index + 1 if new_steps else after,
        "finished": finished,
    }
    response = render(request, ROLLOUT + "#steps-tail", context)
    if new_steps or finished:
        response["HX-Trigger"] = "rollout-progress"  # the summary refreshes itself
    return response


def _comments_context(request: HttpRequest, step: Step, **extra) -> dict:
    step = decorate_steps([selectors.rollout_steps(rollout=step.rollout).get(pk=step.pk)], step.rollout)[0]
    return {"step": step, **_roles(request, step.rollout.batch.project_id), **extra}


@require_POST
def step_comment_add(request: HttpRequest, pk: int) -> HttpResponse:
    step = selectors.step_get_for_user(user=request.user, pk=pk)
    back = reverse("rollout-detail", args=[step.rollout_id]) + f"#step-{step.pk}"
    form = StepCommentForm(request.POST)
    try:
        if not form.is_valid():
            raise ApplicationError("Write a comment first (at most 10,000 characters).")
        services.step_comment_add(step=step, user=request.user, text=form.cleaned_data["text"])
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect(back)
        return render_error(
            request, STEP + "#step-comments", _comments_context(request, step, comment_text=request.POST.get("text", "")), error
        )
    if not request.htmx:
        return redirect(back)
    return render(request, STEP + "#step-comments", _comments_context(request, step))


# --- A criterion from a step ---------------------------------------------------------------

def evidence_label(step: Step) -> str:
    return f"Rollout {step.rollout.index + 1}, step {step.index + 1}"


@require_http_methods(["GET", "POST"])
def step_criterion(request: HttpRequest, pk: int) -> HttpResponse:
    """"Make a criterion from this step": the step, and a criterion form prefilled from it.
    Saved criteria carry the step as evidence and the rubric editor opens."""
    step = selectors.step_get_for_user(user=request.user, pk=pk)
    rollout = step.rollout
    batch = rollout.batch
    env_task = batch.env_task
    rubric = rubric_version_current(env_task=env_task)
    if request.method == "POST":
        form = StepCriterionForm(request.POST)
    else:
        form = StepCriterionForm(initial={"text": criterion_prefill(step), "revision": rubric.revision if rubric else None})
    label = evidence_label(step)
    context = {
        **_roles(request, batch.project_id),
        "step": decorate_steps([step], rollout)[0],
        "rollout": rollout,
        "batch": batch,
        "env_task": env_task,
        "world": env_task.world,
        "project": env_task.world.project,
        "rubric": rubric,
        "form": form,
        "evidence_label": label,
        "show_comments": False,
    }
    if request.method == "GET":
        return render(request, CRITERION, context)
    try:
        if not form.is_valid():
            raise form_error(form)
        data = form.cleaned_data
        authoring_services.criterion_add(
            env_task=env_task, user=request.user, base_revision=data["revision"], text=data["text"], points=data["points"],
            tag=data["tag"], explanation=data["explanation"],
            evidence={"step": step.pk, "rollout": rollout.pk, "batch": batch.pk, "label": label},
        )
    except ApplicationError as error:
        # Kept as typed; based on the rubric as it is now, so sending it again adds it.
        rubric = rubric_version_current(env_task=env_task)
        context["form"] = StepCriterionForm({**request.POST.dict(), "revision": rubric.revision if rubric else ""})
        return render_error(request, CRITERION, context, error)
    messages.success(request, f"Criterion added to the rubric, with {label} as its evidence.")
    return redirect(reverse("task-editor", args=[env_task.pk]) + "#rubric")
