"""What the rollout pages show, prepared in Python so the templates stay simple: numbers
formatted, tool arguments and results pretty-printed, long results flagged for collapsing,
diffs split into classed lines. Nothing here is marked safe: the templates escape all of
it (model text alone goes through the sanitizing `markdown` filter)."""

import hashlib
import html
import json
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, QuerySet
from django.urls import reverse
from django.utils.html import strip_tags
from django.utils.text import Truncator

from core.sanitize import markdown_to_safe_html
from rollouts.models import Rollout, RolloutBatch, RolloutStatus, Step, StepKind
from workspace.selectors import Change

LONG_RESULT_CHARS = 800
LONG_RESULT_LINES = 16
GIST_CHARS = 140
LONG_DIFF_LINES = 60
MAX_PILLS = 40
ANSWER_PREVIEW_CHARS = 110
STATUS_ORDER = ("completed", "failed", "cancelled", "running", "queued")


def tokens(n: int | None) -> str:
    return f"{n or 0:,}"


def money(amount: Decimal | None) -> str:
    amount = amount or Decimal(0)
    return f"${amount:,.4f}" if amount < 1 else f"${amount:,.2f}"


def seconds(ms: int | float | None) -> str:
    s = (ms or 0) / 1000
    if s < 60:
        return f"{s:.1f} s"
    minutes, rest = divmod(round(s), 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def pretty_json(value: object) -> str:
    """A tool's arguments or result as indented JSON; text that is not JSON as it is."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def call_signature(name: str, arguments: object) -> str:
    """`read_file(path="Deal/LOI.docx")`: one line, for the tool step's heading."""
    if isinstance(arguments, dict) and set(arguments) != {"raw"}:
        inner = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items())
    elif isinstance(arguments, dict):
        inner = str(arguments["raw"])
    else:
        inner = "" if arguments is None else str(arguments)
    inner = inner if len(inner) <= 160 else inner[:157] + "…"
    return f"{name}({inner})"


@dataclass
class ToolCallView:
    name: str
    arguments: str  # pretty-printed
    malformed: bool


def decorate_steps(steps: list[Step], rollout: Rollout) -> list[Step]:
    """Add what the step template shows to each step (its number, formatted numbers,
    pretty arguments and result, whether the result is long)."""
    for step in steps:
        step.number = step.index + 1
        step.is_model = step.kind == StepKind.MODEL
        step.tokens_label = f"{tokens(step.input_tokens)} in / {tokens(step.output_tokens)} out" if step.is_model else ""
        step.cost_label = money(step.cost) if step.is_model else ""
        step.latency_label = seconds(step.latency_ms)
        step.offset_label = f"+{seconds((step.created_at - rollout.started_at).total_seconds() * 1000)}" if rollout.started_at else ""
        step.calls = [
            ToolCallView(
                name=call.get("name", ""),
                arguments=pretty_json(call["arguments"] if call.get("arguments") is not None else call.get("raw_arguments", "")),
                malformed=call.get("arguments") is None,
            )
            for call in (step.tool_calls or [])
        ]
        step.is_final = step.is_model and not step.tool_calls
        if not step.is_model:
            step.signature = call_signature(step.tool_name, step.arguments)
            step.result = pretty_json(step.text)
            lines = step.result.count("\n") + 1
            step.result_lines = lines
            step.result_chars = len(step.result)
            step.result_is_long = not step.is_error and (len(step.result) > LONG_RESULT_CHARS or lines > LONG_RESULT_LINES)
            gist = " ".join(step.text.split())
            step.result_gist = gist if len(gist) <= GIST_CHARS else gist[: GIST_CHARS - 1] + "…"
    return steps


@dataclass
class DiffLine:
    text: str
    kind: str  # add | del | gap | ""


@dataclass
class ChangeView:
    path: str
    action: str  # added | modified | deleted
    lines: list[DiffLine]
    is_long: bool


def changes_view(changes: list[Change]) -> list[ChangeView]:
    """The overlay's changes as an expert reads them: a new file's content as it is; a
    changed one as its changed lines (removed in red, added in green) with a little
    context, without the diff's file headers and @@ markers; a deleted one by name only."""
    views = []
    for change in changes:
        if change.action == "added":
            lines = [DiffLine(text=line, kind="add") for line in change.after.splitlines()]
        elif change.action == "deleted":
            lines = []
        else:
            lines = []
            for line in change.diff.splitlines():
                if line.startswith(("+++", "---")):
                    continue
                if line.startswith("@@"):
                    if lines:
                        lines.append(DiffLine(text="⋯", kind="gap"))
                    continue
                kind = {"+": "add", "-": "del"}.get(line[:1], "")
                lines.append(DiffLine(text=line[1:], kind=kind))
        views.append(ChangeView(path=change.path, action=change.action, lines=lines, is_long=len(lines) > LONG_DIFF_LINES))
    return views


# --- Batches ---------------------------------------------------------------------------

def progress_view(progress: dict) -> dict:
    """batch_progress plus the bar's segments (completed, failed, cancelled, running) and
    formatted totals."""
    total = progress["total"] or 1
    segments = [
        {"status": status, "count": progress[status], "width": f"{100 * progress[status] / total:.2f}"}
        for status in STATUS_ORDER
        if status != "queued" and progress[status]
    ]
    return {
        **progress,
        "segments": segments,
        # Only the statuses some rollout has: "0 failed · 0 cancelled" is noise.
        "counts": [(status, RolloutStatus(status).label, progress[status]) for status in STATUS_ORDER if progress[status]],
        "tokens_label": f"{tokens(progress['input_tokens'])} in / {tokens(progress['output_tokens'])} out",
        "cost_label": money(progress["cost"]),
    }


def batch_state(batch: RolloutBatch, progress: dict) -> tuple[str, str]:
    """(css class, label) of the batch as a whole."""
    if progress["is_finished"]:
        return ("cancelled", "Cancelled") if batch.cancelled_at else ("completed", "Finished")
    if batch.cancelled_at:
        return ("running", "Cancelling…")
    if progress["running"] or progress["finished"]:
        return ("running", "Running")
    return ("queued", "Waiting for a worker")


_previews: dict[bytes, str] = {}


def answer_preview(text: str) -> str:
    """A final answer as a line of plain text (the template escapes it): its markdown
    rendered and the tags dropped, cut at ANSWER_PREVIEW_CHARS. Kept per process by a digest
    of the answer (an answer can be a long document): a batch page polled every 2 s shows the
    same answers again and again."""
    if not text:
        return ""
    key = hashlib.blake2b(text.encode(), digest_size=16).digest()
    preview = _previews.get(key)
    if preview is None:
        if len(_previews) >= 4096:
            _previews.clear()
        preview = _previews[key] = Truncator(html.unescape(strip_tags(markdown_to_safe_html(text))).strip()).chars(ANSWER_PREVIEW_CHARS)
    return preview


def rollout_rows(batch: RolloutBatch, rollouts: QuerySet[Rollout]) -> list[Rollout]:
    """The batch's rollouts with their steps so far as small pills (model, tool, error)
    and formatted numbers. Two queries whatever the batch size."""
    rows = list(rollouts)
    trails: dict[int, list[str]] = {r.pk: [] for r in rows}
    last_tool: dict[int, str] = {}
    spent: dict[int, list] = {}  # rollout → [input tokens, output tokens, cost] of its saved steps
    for rollout_id, kind, is_error, tool_name, input_tokens, output_tokens, cost in (
        Step.objects.filter(rollout__batch=batch).order_by("rollout_id", "index")
        .values_list("rollout_id", "kind", "is_error", "tool_name", "input_tokens", "output_tokens", "cost")
    ):
        trails.setdefault(rollout_id, []).append("error" if is_error else kind)
        last_tool[rollout_id] = tool_name if kind == StepKind.TOOL else ""
        totals = spent.setdefault(rollout_id, [0, 0, Decimal(0)])
        totals[0], totals[1], totals[2] = totals[0] + input_tokens, totals[1] + output_tokens, totals[2] + cost
    for rollout in rows:
        rollout.number = rollout.index + 1
        trail = trails[rollout.pk]
        rollout.pills = trail[:MAX_PILLS]
        rollout.pills_hidden = max(0, len(trail) - MAX_PILLS)
        last = last_tool.get(rollout.pk, "")
        rollout.doing = ""
        if rollout.status == RolloutStatus.RUNNING:
            rollout.doing = f"last ran {last}; the model is thinking" if last else "the model is thinking"
            # (a running rollout's own totals are written every few seconds; its saved steps are up to date)
            rollout.input_tokens, rollout.output_tokens, rollout.cost = spent.get(rollout.pk, (0, 0, Decimal(0)))
        rollout.tokens_label = f"{tokens(rollout.input_tokens)} / {tokens(rollout.output_tokens)}"
        rollout.cost_label = money(rollout.cost)
        rollout.answer_preview = answer_preview(rollout.final_answer)
        rollout.url = reverse("rollout-detail", args=[rollout.pk])
        rollout.duration_label = (
            seconds((rollout.finished_at - rollout.started_at).total_seconds() * 1000) if rollout.finished_at and rollout.started_at else ""
        )
    return rows


def add_grades(rows: list[Rollout], grades: dict[int, dict]) -> list[Rollout]:
    """Each row's grade (selectors.batch_latest_grades: {status, score, passed}, or None)."""
    for rollout in rows:
        rollout.grade = grades.get(rollout.pk)
    return rows


def batch_list_with_counts(batches: QuerySet[RolloutBatch]) -> QuerySet[RolloutBatch]:
    return batches.annotate(
        total=Count("rollouts"),
        **{f"n_{status}": Count("rollouts", filter=Q(rollouts__status=status)) for status in STATUS_ORDER},
    )


def batch_row_counts(batch: RolloutBatch) -> list[tuple[str, str, int]]:
    return [(s, RolloutStatus(s).label, getattr(batch, f"n_{s}")) for s in STATUS_ORDER if getattr(batch, f"n_{s}")]


def batch_row_unfinished(batch: RolloutBatch) -> bool:
    return bool(batch.n_running or batch.n_queued)
