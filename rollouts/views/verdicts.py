"""Beside a trajectory: the judge's verdict on each criterion with its explanation, linked to
the steps it rests on; and, per model step, the exact request the model was sent and the
answer it gave. Prepared in Python, escaped by the templates: the judge's explanation is
model text, cut into plain text and step links, never marked safe."""

import re
from dataclasses import dataclass, field
from datetime import timedelta

from django.utils import timezone

from authoring.models import Criterion
from llm.client import request_body
from llm.models import EndpointKind
from rollouts.models import BatchMode, ExpertVerdict, Grade, GradeStatus, Rollout, RolloutStatus, Step, Verdict
from rollouts.views.display import pretty_json

# "step 3", "Step #3", "steps 3 and 5", "steps 2-4", "steps 2 to 4, 7": the numbers the author sees.
STEP_REFERENCE = re.compile(r"\b(?:steps?)\s+#?\d+(?:\s*(?:,|and|or|&|to|-|–)\s*#?\d+)*", re.IGNORECASE)
NUMBER = re.compile(r"\d+")
RANGE = re.compile(r"^\s*(?:-|–|to)\s*#?$", re.IGNORECASE)
MAX_RANGE = 50
GRADE_WAIT = timedelta(minutes=1)


@dataclass
class Segment:
    """A piece of the judge's explanation: plain text, or a step number that links to its step."""

    text: str
    step_pk: int | None = None


def step_references(text: str, step_pks: dict[int, int]) -> tuple[list[Segment], set[int]]:
    """The explanation as segments (each step number it names that is a step of this
    trajectory becomes a link), and every step number it names (a range counts each step
    in it). A number that names no step stays text."""
    segments: list[Segment] = []
    cited: set[int] = set()
    done = 0
    for match in STEP_REFERENCE.finditer(text or ""):
        numbers = list(NUMBER.finditer(match.group(0)))
        previous = None
        for found in numbers:
            number = int(found.group(0))
            start, end = match.start() + found.start(), match.start() + found.end()
            if previous is not None and RANGE.match(text[previous[1]:start]) and 0 < number - previous[0] <= MAX_RANGE:
                cited.update(n for n in range(previous[0] + 1, number) if n in step_pks)
            if number in step_pks:
                cited.add(number)
                if start > done:
                    segments.append(Segment(text[done:start]))
                segments.append(Segment(found.group(0), step_pks[number]))
                done = end
            previous = (number, end)
    if done < len(text or ""):
        segments.append(Segment(text[done:]))
    return segments, cited


def _named_steps(verdict: Verdict) -> set[int]:
    """The step numbers the judge named in its answer's `steps` (grades from before the judge
    was asked for them have none): those of the sample whose explanation is the rationale."""
    samples = [s for s in verdict.samples or [] if isinstance(s, dict) and s.get("met") == verdict.met]
    chosen = next((s for s in samples if s.get("explanation") == verdict.rationale), samples[0] if samples else {})
    steps = chosen.get("steps") or []
    return {n for n in steps if isinstance(n, int) and not isinstance(n, bool)} if isinstance(steps, list) else set()


@dataclass
class VerdictView:
    number: int
    criterion: Criterion
    verdict: Verdict | None
    segments: list[Segment] = field(default_factory=list)
    cited: list[tuple[int, int]] = field(default_factory=list)  # (step number, step pk), in order
    experts: list[ExpertVerdict] = field(default_factory=list)  # experts' own calls, where they disagree with the judge

    @property
    def experts_disagree(self) -> bool:
        return any(self.verdict is not None and self.verdict.met is not None and e.met != self.verdict.met for e in self.experts)

    @property
    def state(self) -> str:
        if self.verdict is None:
            return "pending"
        if self.verdict.met is None:
            return "none"
        return "met" if self.verdict.met else "not_met"


def verdict_panel(*, rollout: Rollout, grade: Grade | None, steps: list[Step], has_criteria: bool,
                  expert_verdicts: list[ExpertVerdict] = ()) -> dict:
    """What the verdict panel beside the trajectory shows: the grade, each criterion's verdict
    with the judge's explanation and the steps it rests on (the ones the judge named, and the
    ones its explanation mentions), and whether the panel should reload itself (the rollout
    is running, or its grade is). Marks each step with the criteria whose verdicts cite it."""
    step_pks = {step.index + 1: step.pk for step in steps}
    for step in steps:
        step.cited_by = []
    views: list[VerdictView] = []
    if grade is not None:
        by_criterion = {v.criterion_id: v for v in grade.verdicts.all()}
        by_pk = {step.pk: step for step in steps}
        for number, criterion in enumerate(grade.rubric_version.criteria.all(), start=1):
            verdict = by_criterion.get(criterion.pk)
            view = VerdictView(number=number, criterion=criterion, verdict=verdict,
                               experts=[e for e in expert_verdicts if e.criterion_id == criterion.pk])
            if verdict is not None:
                view.segments, mentioned = step_references(verdict.error or verdict.rationale, step_pks)
                named = {n for n in _named_steps(verdict) if n in step_pks}
                view.cited = [(n, step_pks[n]) for n in sorted(named | mentioned)]
                for _, pk in view.cited:
                    by_pk[pk].cited_by.append(view)
            views.append(view)
    pending = grade is not None and grade.status in (GradeStatus.QUEUED, GradeStatus.RUNNING)
    # A running rollout's grade comes once it completes; a completed one's grade is queued as it
    # finishes (a minute is ample: after that, none is coming and nothing needs to poll).
    just_completed = (
        rollout.status == RolloutStatus.COMPLETED and rollout.finished_at is not None and timezone.now() - rollout.finished_at < GRADE_WAIT
    )
    return {
        "grade": grade,
        "verdicts": views,
        "has_criteria": has_criteria,
        "grade_pending": pending,
        "awaits_grade": has_criteria and grade is None and (not rollout.is_finished or just_completed),
    }


# --- A model step's request and response -------------------------------------------------------

def step_exchange(*, step: Step, messages: list[dict], tools: list[dict] | None) -> dict:
    """The request as Taskwright's client sends it for this step (the batch's model and
    parameters, the tools offered, the messages rebuilt from the steps before it: the
    conversation is not stored per step, it would grow with the square of its length) and
    the provider's answer as it came."""
    batch = step.rollout.batch
    endpoint = batch.endpoint
    kind = endpoint.kind if endpoint else EndpointKind.OPENAI_COMPATIBLE
    body = request_body(
        kind=kind, model=endpoint.model if endpoint else batch.endpoint_name,
        messages=messages, tools=tools, temperature=batch.temperature, max_tokens=batch.max_output_tokens,
    )
    if endpoint is not None and endpoint.stream:
        body["stream"] = True
    return {
        "step": step,
        "number": step.index + 1,
        "request": pretty_json(body),
        "response": pretty_json(step.raw_response) if step.raw_response else "",
        "message_count": len(messages),
        "tool_names": [t["name"] for t in tools or []],
        "with_tools": batch.mode == BatchMode.TOOLS,
        "endpoint_label": batch.endpoint_name + (
            "" if batch.endpoint_scripted
            else " (Anthropic Messages API)" if kind == EndpointKind.ANTHROPIC else " (OpenAI-compatible chat completions)"
        ),
        "endpoint_gone": endpoint is None,
        "scripted": batch.endpoint_scripted,
        "streamed": endpoint is not None and endpoint.stream,
    }
