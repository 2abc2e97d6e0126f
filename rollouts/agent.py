"""The agent loop of one rollout: system prompt + task prompt → model → tool calls run
against the world's tools and the rollout's own overlay → … until a final answer, the
step limit, the time limit, a failure or a cancel.

Every step is saved as it happens under a unique (rollout, index), and the conversation
is rebuilt from the saved steps, so a rollout whose worker was killed resumes from its
last saved step when the broker redelivers it, and a duplicate delivery does nothing.
A model step whose tool calls only read is saved together with their results, in one
statement: a worker killed between the model's answer and that statement asks the model
again on resume, and the reads changed nothing. Every call is in the model-call log from
before its request goes out (llm.client), whatever happens to its step: a call asked again
after a kill is in the log twice, as it was made (and paid for) twice.
A model step with a write is saved before the write runs; each write then commits in one
transaction with its result step, whose unique (rollout, index) and tool call id are the
write's idempotency key (rollout, step, call): a worker killed during the write leaves
neither (the resumed rollout makes it, once), one killed after leaves both (the resumed
rollout finds the result and does not make it again), so an email is never sent twice.

Heartbeats, staleness and the time limit go by the database's clock (`Now()`), not the
host's. The worker's pulse (core.jobs) also ends a rollout still running TASK_TIME_MARGIN
past its time limit: one whose thread hangs where the loop cannot check its own limit.
"""

import contextlib
import json
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from authoring.models import Criterion
from core.jobs import Deadline, JobStates, kept_alive
from llm.client import chat
from llm.errors import ModelError
from llm.models import CallPurpose, ModelEndpoint
from rollouts.constants import TASK_TIME_MARGIN
from rollouts.grading.services import rollout_graded
from rollouts.models import BatchMode, Rollout, RolloutBatch, RolloutStatus, Step, StepKind
from workspace.models import OverlayEntry, OverlayPurpose
from workspace.services import overlay_create
from workspace.tools import Item, Workspace, execute, tool_specs, tool_writes
from workspace.tools.world import world_items_of

logger = logging.getLogger(__name__)
MAX_ATTEMPTS = 3
ROLLOUT_STATES = JobStates(queued=RolloutStatus.QUEUED, running=RolloutStatus.RUNNING, failed=RolloutStatus.FAILED, error="reason")
PULSE_SECONDS = 2.0  # at most this long between a running rollout's heartbeats (and cancel checks); the batch page polls as often


class _Stop(Exception):
    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def rollout_execute(*, rollout_id: int) -> None:
    """Claim and run one rollout. A queued rollout is claimed; a running one only when its
    heartbeat is stale (its worker died) — a duplicate message for a healthy running rollout
    does nothing, so two runs of one rollout never overlap."""
    claimed = _claim(rollout_id)
    if claimed is None:
        now = Now()
        orphans = Rollout.objects.filter(_stale(), pk=rollout_id, status=RolloutStatus.RUNNING)
        # Its worker died after its batch was cancelled: nothing to resume.
        orphans.filter(stop_requested=True).update(status=RolloutStatus.CANCELLED, reason="Cancelled while running.", finished_at=now)
        orphans.exclude(_attempts_left()).update(
            status=RolloutStatus.FAILED, reason="The worker running this rollout was interrupted too many times.", finished_at=now
        )
        return
    rollout, entries = claimed
    # Read once; from here on each saved step is appended (_save_steps), never read again.
    # A first delivery (its claim took it from QUEUED) has nothing saved yet.
    steps = list(rollout.steps.order_by("index")) if rollout.attempts > 1 else []
    try:
        # Beaten by the worker's pulse thread whatever the rollout waits on (a long model call
        # included), so its heartbeat goes stale only when its worker is gone; and ended by it,
        # whatever its thread is doing, past its time limit and the Celery task's margin.
        limit = rollout.batch.time_limit_seconds
        deadline = Deadline(timedelta(seconds=limit + TASK_TIME_MARGIN), f"Stopped at the time limit of {limit} s (its run hung).")
        with kept_alive(Rollout, rollout_id, states=ROLLOUT_STATES, release_on_error=False, deadline=deadline):
            final = _loop(rollout, steps, entries)
    except _Stop as stop:
        if stop.status != RolloutStatus.RUNNING:  # RUNNING: another delivery carries on
            _finish(rollout, steps, stop.status, stop.reason)
        return
    except ModelError as error:
        _finish(rollout, steps, RolloutStatus.FAILED, f"The model call failed: {error.message}")
        return
    except (OperationalError, InterfaceError):
        # The database went away (restarting): not the rollout's failure. Its heartbeat is let
        # go if the database answers already, so the task's retry (rollouts.tasks) resumes it
        # at once; otherwise the heartbeat goes stale and the rollout is sent again.
        with contextlib.suppress(DatabaseError):
            Rollout.objects.filter(pk=rollout_id, status=RolloutStatus.RUNNING).update(heartbeat_at=None)
        raise
    except Exception as error:  # a bug must still leave a readable, terminal rollout
        if isinstance(error, IntegrityError) and _endpoint_deleted(rollout):
            _finish(rollout, steps, RolloutStatus.FAILED, ENDPOINT_DELETED)
            return
        logger.exception("rollout %s failed", rollout_id)
        _finish(rollout, steps, RolloutStatus.FAILED, f"Internal error ({type(error).__name__}); the team has the log.")
        return
    # The end and the grade's request commit together: a worker killed between them would
    # leave a completed rollout that is never graded (the grade is queued after the commit).
    with transaction.atomic():
        if _finish(rollout, steps, RolloutStatus.COMPLETED, "Finished with a final answer.", final_answer=final):
            rollout_graded(rollout=rollout, has_criteria=rollout.batch.rubric_has_criteria)  # queued on the grading queue


ENDPOINT_DELETED = "The model endpoint of this batch was deleted."


def _endpoint_deleted(rollout: Rollout) -> bool:
    """Whether the endpoint this rollout was running on is gone: an admin deleted it while
    the rollout ran (or within BATCH_SECONDS before it started), so the model call's row of
    the log could not point at it."""
    endpoint_id = rollout.batch.endpoint_id
    return endpoint_id is not None and not ModelEndpoint.objects.filter(pk=endpoint_id).exists()


def _stale() -> Q:
    """No heartbeat for ROLLOUT_STALE_SECONDS, by the database's clock."""
    return Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=Now() - timedelta(seconds=settings.ROLLOUT_STALE_SECONDS))


def _attempts_left() -> Q:
    """The rollout may be taken over again: fewer attempts than MAX_ATTEMPTS plus the model
    steps it has saved. Only attempts that got nowhere use up the limit: a rollout that keeps
    moving is resumed as often as its workers are killed (each attempt saved a step), while
    one that kills its worker at the same point every time gives up after MAX_ATTEMPTS more."""
    saved = Step.objects.filter(rollout=OuterRef("pk"), kind=StepKind.MODEL).order_by().values("rollout").annotate(n=Count("id"))
    return Q(attempts__lt=Coalesce(Subquery(saved.values("n")), 0) + MAX_ATTEMPTS)


def _claim(rollout_id: int) -> tuple[Rollout, list[OverlayEntry]] | None:
    """The rollout, claimed, with its batch (batch_context), its overlay and the overlay's
    entries (in id order); None if another delivery holds it or it is finished. A queued
    rollout is claimed; a running one only when its heartbeat is stale and it has attempts
    left and no stop request. The claim is one conditional UPDATE, so of two deliveries
    racing for a rollout exactly one takes it; the reads after it see the claimed row.
    `rollout.db_now`: the database's clock when it was read (the time limit counts by it)."""
    resumable = Q(status=RolloutStatus.RUNNING, stop_requested=False) & _stale() & _attempts_left()
    claimable = Q(status=RolloutStatus.QUEUED) | resumable
    claimed = Rollout.objects.filter(claimable, pk=rollout_id).update(
        status=RolloutStatus.RUNNING, attempts=F("attempts") + 1, heartbeat_at=Now(), started_at=Coalesce("started_at", Now()),
    )
    if not claimed:
        return None
    rollout = Rollout.objects.select_related("overlay").annotate(db_now=Now()).get(pk=rollout_id)
    rollout.batch = batch_context(rollout.batch_id)
    # (no overlay for a rollout of a batch started before rollouts had their own: _overlay makes it)
    entries = list(OverlayEntry.objects.filter(overlay_id=rollout.overlay_id).order_by("id")) if rollout.overlay_id else []
    return rollout, entries


BATCH_SECONDS = 5.0
_batches: dict[int, tuple[float, RolloutBatch]] = {}
_worlds: dict[tuple[int, int], tuple[float, dict[str, Item]]] = {}  # (world, task) → items


def _recent[K, V](store: dict[K, tuple[float, V]], key: K, load: Callable[[], V]) -> V:
    """store[key], loaded again once it is older than BATCH_SECONDS. (Two threads may both
    load it; either copy is right.)"""
    now = time.monotonic()
    kept = store.get(key)
    if kept is None or now - kept[0] > BATCH_SECONDS:
        for old, (since, _) in list(store.items()):  # (a world's documents are not kept past their use)
            if now - since > BATCH_SECONDS:
                store.pop(old, None)
        kept = store[key] = (now, load())
    return kept[1]


def batch_context(batch_id: int) -> RolloutBatch:
    """The batch with its endpoint, task and world, read at most once every BATCH_SECONDS
    per process: every rollout of a batch needs them, and a worker starts dozens of its
    rollouts a second. What the rollout runs against is frozen on the batch; an edit to the
    endpoint (disabled, its cap) reaches a worker's next rollouts within BATCH_SECONDS, as
    its running rollouts keep the endpoint they started with. Shared by the worker's
    threads: read it, never change it. `rubric_has_criteria`: whether its rubric version
    (frozen when the batch started, so for good) has criteria to grade against."""
    batches = RolloutBatch.objects.select_related("endpoint", "env_task__world").annotate(
        rubric_has_criteria=Exists(Criterion.objects.filter(rubric_version_id=OuterRef("rubric_version_id")))
    )
    return _recent(_batches, batch_id, lambda: batches.get(pk=batch_id))


def world_items(world_id: int, env_task_id: int) -> dict[str, Item]:
    """The world's own documents with the task's input files laid over them, as the tools
    read them, loaded at most once every BATCH_SECONDS per process. Kept per task (its
    files are its own; tasks on one world each keep a copy). A rollout reads the world as
    it was when it started (its workspace keeps what it loaded); an edit to the world or
    the task's files reaches the rollouts that start BATCH_SECONDS after it at the latest.
    Immutable, shared by the worker's threads."""
    return _recent(_worlds, (world_id, env_task_id), lambda: world_items_of(world_id, env_task_id))


def _totals(steps: list[Step]) -> dict:
    """The rollout's token and cost totals: sums over its saved steps. `steps` holds every
    saved step of the rollout up to its last (read at the start, then each one this delivery
    saved), so the sums are right after a resume too."""
    return {
        "input_tokens": sum(s.input_tokens for s in steps), "output_tokens": sum(s.output_tokens for s in steps),
        "cost": sum((s.cost for s in steps), Decimal("0")),
    }


def _finish(rollout: Rollout, steps: list[Step], status: str, reason: str, final_answer: str = "") -> bool:
    """The terminal state with the final totals; False if the rollout had already left RUNNING."""
    values = {"status": status, "reason": reason[:2000], "final_answer": final_answer, "finished_at": timezone.now(), **_totals(steps)}
    if not Rollout.objects.filter(pk=rollout.pk, status=RolloutStatus.RUNNING).update(**values):
        return False
    for name, value in values.items():
        setattr(rollout, name, value)
    return True


def _overlay(rollout: Rollout):
    """The rollout's own scratch overlay: made when its batch started; made here, once even
    if two deliveries race, for a rollout that has none (a batch started before that)."""
    if rollout.overlay_id:
        return rollout.overlay
    batch = rollout.batch
    overlay = overlay_create(
        world=batch.env_task.world,
        user=batch.created_by,
        label=f"Rollout {rollout.index + 1} of batch {batch.pk}",
        purpose=OverlayPurpose.ROLLOUT,
        env_task=batch.env_task,
    )
    if Rollout.objects.filter(pk=rollout.pk, overlay__isnull=True).update(overlay=overlay):
        rollout.overlay = overlay
    else:  # another delivery attached its overlay first: use that one
        overlay.delete()
        rollout.refresh_from_db(fields=["overlay"])
    return rollout.overlay


def conversation_before(rollout: Rollout, steps: list[Step]) -> list[dict]:
    """The messages the model is sent after `steps` (the rollout's saved steps, in order): the
    batch's system prompt, the task prompt, then each step. The trajectory page rebuilds a
    step's request with it, so no conversation is stored per step."""
    batch = rollout.batch
    messages = [{"role": "system", "content": batch.system_prompt}, {"role": "user", "content": batch.task_snapshot["prompt"]}]
    for step in steps:
        if step.kind == StepKind.MODEL:
            message: dict = {"role": "assistant", "content": step.text}
            if step.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c.get("raw_arguments") or json.dumps(c.get("arguments") or {})},
                    }
                    for c in step.tool_calls
                ]
            messages.append(message)
        else:
            messages.append({"role": "tool", "tool_call_id": step.tool_call_id, "content": step.text})
    return messages


def _save_steps(rollout: Rollout, steps: list[Step], new: list[Step]) -> None:
    """Save the next steps, numbered on from `steps` (the rollout's saved steps, in order),
    in one statement, all or none; append them to `steps`.

    Committed on its own: the unique (rollout, index) makes each step's only copy. Inside a
    caller's transaction (tests, a shell) a savepoint keeps that transaction usable after a
    clash; a worker runs in autocommit, where a savepoint would only add a BEGIN and a
    COMMIT to every step."""
    for offset, step in enumerate(new):
        step.index = len(steps) + offset
    atomic = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    try:
        with atomic:
            Step.objects.bulk_create(new)
    except IntegrityError:
        # Another delivery of this rollout saved these steps: let that one carry on.
        raise _Stop(RolloutStatus.RUNNING, "duplicate delivery") from None
    steps.extend(new)


class _Pulse:
    """A running rollout's round trip to its row before a model call, in one statement: the
    heartbeat, the token and cost totals so far (sums over the saved steps, so a resumed
    rollout's are right too) and the batch's cancel (a rollout asked to stop matches no
    row). Before a model call, at most once every PULSE_SECONDS (counted from the claim): a fast
    model makes hundreds of calls a second in one worker, too many to pay a statement each,
    and every 2 s (as often as the batch page polls) still stops a cancelled rollout within
    seconds and keeps the live totals fresh (on the rollout benchmark 1 s cost 3-8 % more in
    wall time). Finishing writes the final totals whatever the pulse last wrote."""

    def __init__(self, rollout: Rollout) -> None:
        self.rollout = rollout
        # A rollout just claimed (the claim set its heartbeat) has its first beat a pulse later.
        self.last = time.monotonic()

    def beat(self, steps: list[Step]) -> None:
        if time.monotonic() - self.last < PULSE_SECONDS:
            return
        alive = Rollout.objects.filter(pk=self.rollout.pk, status=RolloutStatus.RUNNING, stop_requested=False).update(
            heartbeat_at=Now(), **_totals(steps)
        )
        self.last = time.monotonic()
        if not alive:  # cancelled (or already ended: by the worker's pulse at its deadline, say)
            raise _Stop(RolloutStatus.CANCELLED, "Cancelled while running.")


def _check(rollout: Rollout, steps: list[Step], deadline: float, pulse: _Pulse) -> None:
    """Before each model call: the batch's cancel (through the pulse) and the time limit
    (`deadline`, on this process's monotonic clock)."""
    pulse.beat(steps)
    if time.monotonic() > deadline:
        raise _Stop(RolloutStatus.FAILED, f"Stopped at the time limit of {rollout.batch.time_limit_seconds} s.")


def _tool_step(rollout: Rollout, workspace: Workspace, call: dict) -> Step:
    """Run one tool call; its result as an unsaved step."""
    started = time.monotonic()
    parsed, raw = call.get("arguments"), call.get("raw_arguments", "")  # parsed is None when the model's JSON was not an object
    result = execute(workspace=workspace, name=call["name"], arguments=parsed if parsed is not None else raw)
    return _result_step(rollout, call, result.text, is_error=result.is_error, latency_ms=int((time.monotonic() - started) * 1000))


def _result_step(rollout: Rollout, call: dict, text: str, *, is_error: bool = False, latency_ms: int = 0) -> Step:
    parsed = call.get("arguments")
    return Step(
        rollout=rollout, kind=StepKind.TOOL, tool_call_id=call["id"], tool_name=call["name"][:100],
        arguments=parsed if parsed is not None else {"raw": call.get("raw_arguments", "")}, text=text, is_error=is_error,
        latency_ms=latency_ms,
    )


def _run_tools(rollout: Rollout, workspace: Workspace, calls: list[dict], steps: list[Step], done_ids: set[str]) -> None:
    """Run the calls not in `done_ids` (those have a saved result), saving each result as
    soon as it exists. A write commits with its result step, in one transaction: the step
    (rollout, index, call id) is the write's idempotency key, so a write is made exactly
    once whenever the worker dies."""
    for call in calls:
        if call["id"] in done_ids:
            continue
        if not tool_writes(call["name"]):
            _save_steps(rollout, steps, [_tool_step(rollout, workspace, call)])
            continue
        with transaction.atomic():  # (a duplicate delivery's clash on the step rolls its write back)
            _save_steps(rollout, steps, [_tool_step(rollout, workspace, call)])


def _loop(rollout: Rollout, steps: list[Step], entries: list[OverlayEntry]) -> str:
    batch = rollout.batch
    if batch.endpoint is None:
        raise _Stop(RolloutStatus.FAILED, ENDPOINT_DELETED)
    # The limit counts from the first claim, by the database's clock, whichever host resumes it.
    left = rollout.started_at + timedelta(seconds=batch.time_limit_seconds) - rollout.db_now
    deadline = time.monotonic() + left.total_seconds()
    with_tools = batch.mode == BatchMode.TOOLS
    world = batch.env_task.world
    if with_tools:
        # The claim read the entries of the overlay the rollout came with; for one that
        # _overlay() makes now (or finds another delivery made), the workspace reads them.
        came_with_overlay = rollout.overlay_id is not None
        workspace = Workspace(world, _overlay(rollout), world_items=world_items(world.pk, batch.env_task_id),
                              entries=entries if came_with_overlay else None)
    else:
        workspace = None
    tools = tool_specs(writable=True) if with_tools else None
    # Resume: tool calls of the last model step that have no saved result yet.
    if (steps and steps[-1].kind == StepKind.MODEL and steps[-1].tool_calls) or (steps and steps[-1].kind == StepKind.TOOL):
        last_model = next(s for s in reversed(steps) if s.kind == StepKind.MODEL)
        done = {s.tool_call_id for s in steps if s.kind == StepKind.TOOL and s.index > last_model.index}
        _run_tools(rollout, workspace, last_model.tool_calls, steps, done)
    elif steps and steps[-1].kind == StepKind.MODEL and not steps[-1].tool_calls:
        return steps[-1].text  # the final answer was saved before the worker died
    pulse = _Pulse(rollout)
    while True:
        _check(rollout, steps, deadline, pulse)
        model_steps = sum(1 for s in steps if s.kind == StepKind.MODEL)
        if model_steps >= batch.max_steps:
            raise _Stop(RolloutStatus.FAILED, f"Reached the limit of {batch.max_steps} model steps without a final answer.")
        result = chat(
            endpoint=batch.endpoint, messages=conversation_before(rollout, steps), purpose=CallPurpose.ROLLOUT, project_id=batch.project_id,
            tools=tools, temperature=batch.temperature, max_tokens=batch.max_output_tokens,
        )
        calls = [
            {"id": c.id or f"call_{len(steps)}_{i}", "name": c.name, "arguments": c.arguments, "raw_arguments": c.raw_arguments}
            for i, c in enumerate(result.tool_calls)
        ]
        if calls and not with_tools:
            calls = []  # a no-tools baseline has nothing to call: its text is its answer
        step = Step(
            rollout=rollout, kind=StepKind.MODEL, text=result.text, tool_calls=calls, input_tokens=result.input_tokens,
            output_tokens=result.output_tokens, cost=result.cost, latency_ms=result.latency_ms, finish_reason=result.finish_reason[:40],
            raw_response=result.raw,
        )
        if calls and not any(tool_writes(call["name"]) for call in calls):  # reads only: saved with their results
            results = [_tool_step(rollout, workspace, call) for call in calls]
            _save_steps(rollout, steps, [step, *results])
            continue
        _save_steps(rollout, steps, [step])
        if not calls:
            if not result.text.strip():
                raise _Stop(RolloutStatus.FAILED, "The model ended without a final answer (an empty reply).")
            return result.text
        _run_tools(rollout, workspace, calls, steps, set())
