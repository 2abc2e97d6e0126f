"""A Taskwright pack as an Inspect AI task.

Run it from the root of the unpacked pack (world_files_zipped/ sits next to inspect/):

    inspect eval inspect/task.py --model openai/gpt-4o -T judge_model=openai/gpt-4o

Try it without any API: `--model mockllm/model -T judge_model=mockllm/model` (mockllm's
fixed reply is no JSON verdict, so every criterion is not met and every score is 0;
Inspect counts mockllm's tokens with tiktoken, which downloads its o200k_base file once).

What is in the folder
  task.py            this file: dataset, agent and scorer (the same in every pack)
  world_tools.py     read-only tools over a task's world (files, mail, chat, calendar)
  rubric_grading.py  Taskwright's grading rules: judge prompt, checks, aggregation
  samples.jsonl      the pack's tasks, one Sample per line
  pack.json          the pack's name and version

The samples
  One Sample per task version: input = the prompt, target = the reference answer, id =
  the task id ("task-<n>"), metadata = the rubric (criteria with id, number, text, points,
  tag, grader_kind, grader_config) with pass_threshold, all_must_pass, judge_samples and
  world_id. files = {"world.zip": "../world_files_zipped/<world_id>.zip"}: Inspect copies
  the task's world zip (the APEX-Agents / Archipelago layout) into the sample's sandbox,
  where the world tools read it. A task with input files of its own also has
  {"task_files/<path>": "../task_files/<task_id>/<path>", ...} and "task_files.json" (their
  paths): the tools lay them over the world's files. The sandbox is "local": a temporary folder per sample,
  in which nothing is run (the tools only read world.zip through sandbox(), so another
  sandbox type given with --sandbox serves the same way).

The agent
  A ReAct agent (inspect_ai.agent.react) with the world tools and a submit() tool; the
  submitted text is the answer that is graded. A model that stops calling tools is
  reminded once to submit; if it stops again its last reply is the answer (so a model
  that never calls tools, like mockllm, ends after two turns).

The scorer
  Every criterion is graded on its own (rubric_grading.py): one judge call per criterion
  (or judge_samples calls, majority vote) returning {"explanation", "criteria_met"}; a
  reply that is not such JSON counts as NOT met and is marked malformed in the score's
  metadata. Check criteria run their deterministic check on the final answer. The score
  is Taskwright's: met points / positive points, clipped to [0, 1] (a met pitfall
  subtracts), passed by pass_threshold or, with all_must_pass, every positive criterion
  met and no pitfall met.

  Score value: {"score": <0..1>, "passed": 1.0 | 0.0}; metrics: mean and stderr of each.
  The verdicts (met, explanation, malformed, votes), met points and per-tag scores are in
  the score's metadata.

Task parameters (-T name=value)
  judge_model     the model that grades (default: the model bound to the "grader" role,
                  `--model-role grader=<model>`, else the model under evaluation)
  judge_samples   judge calls per criterion (default: each task's own, usually 1)
  epochs          runs per sample (default 1). The epochs are reduced with mean, pass_at_k
                  for k = 1, 2, 4, ... and epochs, and pass_k (pass^k) for k = epochs: under
                  pass_at_k, "passed" is pass@k (chance that at least one of k runs passes),
                  under pass_k it is pass^k (all k pass); for "score" the same reducers
                  count runs with a perfect score (1.0). Example: `-T epochs=8` reports
                  pass_at_8/passed (Pass@8) and pass_k_8/passed (Pass^8). These reducers
                  come with -T epochs (Inspect's own --epochs is not read by this file).
  message_limit   messages per sample before the agent is stopped (default 80)
"""

import json
from pathlib import Path

from inspect_ai import Epochs, Task, task
from inspect_ai.agent import AgentPrompt, AgentState, AgentSubmit, react
from inspect_ai.dataset import Dataset, json_dataset
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState
from inspect_ai.util import collect
from rubric_grading import JUDGE_SYSTEM, CheckError, aggregate, judge_user_message, majority, parse_verdict, run_check
from world_tools import TASK_FILES_DIR, WORLD_ZIP, world_tools

HERE = Path(__file__).resolve().parent

INSTRUCTIONS = """\
You are working inside a company's world: a data room of files, a mailbox, team chat and a
calendar. Read them with the tools (list_files, read_file, search_world, list_mail,
read_mail, list_chat, read_chat, list_events) and base your answer on what they say. The
world is read-only. When you are done, call submit() with your complete final answer (the
deliverable itself, not a summary of it)."""

NUDGE = "You have not called submit(). If your answer is ready, call submit() with it now; otherwise keep working with the tools."


def load_samples() -> Dataset:
    dataset = json_dataset(str(HERE / "samples.jsonl"))
    for sample in dataset:
        # Inspect reads a `files` value that is no existing path as the file's text: say so
        # here rather than hand the agent a "world.zip" holding a path.
        world = (sample.files or {}).get(WORLD_ZIP)
        if world is not None and not Path(world).is_file():
            raise FileNotFoundError(
                f"{sample.id}: its world {world!r} is missing; run from the unpacked pack with world_files_zipped/ next to inspect/."
            )
        for name, source in (sample.files or {}).items():
            if name.startswith(TASK_FILES_DIR) and not Path(source).is_file():
                raise FileNotFoundError(f"{sample.id}: its input file {source!r} is missing; run from the unpacked pack with "
                                        "task_files/ next to inspect/.")
    return dataset


async def nudge_once(state: AgentState) -> bool | str:
    """Continue while the model calls tools; remind it once to submit; then stop."""
    if state.output.message.tool_calls:
        return True
    reminded = any(isinstance(m, ChatMessageUser) and m.text == NUDGE for m in state.messages)
    return False if reminded else NUDGE


def world_agent():
    # answer_only: the submitted text is the answer the judge sees (not the reply's preamble as well).
    return react(
        prompt=AgentPrompt(instructions=INSTRUCTIONS), tools=world_tools(), submit=AgentSubmit(answer_only=True), on_continue=nudge_once
    )


def steps_text(messages: list[ChatMessage]) -> str:
    """The agent's tool calls and what they returned, for criteria whose judge sees the trajectory."""
    lines = []
    for message in messages:
        if isinstance(message, ChatMessageAssistant):
            if message.text:
                lines.append(f"[assistant] {message.text}")
            lines += [f"[call] {call.function}({json.dumps(call.arguments, ensure_ascii=False)})" for call in message.tool_calls or []]
        elif isinstance(message, ChatMessageTool):
            lines.append(f"[result {message.function}] {message.text[:2000]}")
    return "\n".join(lines)


@scorer(metrics={"score": [mean(), stderr()], "passed": [mean(), stderr()]})
def rubric_scorer(judge_model: str | None = None, judge_samples: int | None = None):
    async def score(state: TaskState, target: Target) -> Score:
        meta = state.metadata
        judge = get_model(judge_model) if judge_model else get_model(role="grader")
        samples = max(1, int(judge_samples or meta.get("judge_samples") or 1))
        config = GenerateConfig(temperature=1.0) if samples > 1 else GenerateConfig()
        answer = state.output.completion
        prompt = state.input_text

        async def grade(criterion: dict) -> dict:
            verdict = {"id": criterion["id"], "number": criterion["number"], "points": criterion["points"], "tag": criterion["tag"]}
            if criterion["grader_kind"] == "check":
                try:
                    met, explanation = run_check(criterion.get("grader_config") or {}, answer)
                except CheckError as error:
                    raise ValueError(f"{criterion['id']}: {error}") from None
                return {**verdict, "grader": "check", "met": met, "explanation": explanation, "malformed": False}
            sees = (criterion.get("grader_config") or {}).get("sees") or ["answer"]
            user = judge_user_message(prompt=prompt, answer=answer, criterion_text=criterion["text"], points=criterion["points"],
                                      trajectory=steps_text(state.messages) if "trajectory" in sees else "")
            votes = []
            for _ in range(samples):
                output = await judge.generate([ChatMessageSystem(content=JUDGE_SYSTEM), ChatMessageUser(content=user)], config=config)
                met, explanation = parse_verdict(output.completion)
                votes.append({"met": met, "explanation": explanation, "malformed": met is None})
            met = majority([v["met"] for v in votes])
            chosen = next((v for v in votes if bool(v["met"]) == met), votes[0])
            return {**verdict, "grader": "judge", "met": met, "explanation": chosen["explanation"],
                    "malformed": any(v["malformed"] for v in votes), "votes": votes if samples > 1 else None}

        verdicts = await collect(*(grade(c) for c in meta["criteria"]))
        result = aggregate(meta["criteria"], {v["id"]: v["met"] for v in verdicts},
                           pass_threshold=meta["pass_threshold"], all_must_pass=meta["all_must_pass"])
        malformed = [v["id"] for v in verdicts if v["malformed"]]
        lines = [f"{'MET' if v['met'] else 'not met'} ({v['points']:+d}) #{v['number']}: {v['explanation']}" for v in verdicts]
        summary = (f"score {result['score']:.3f} ({result['met_points']}/{result['positive_points']} points), "
                   f"{'passed' if result['passed'] else 'not passed'}")
        if malformed:
            summary += f"; malformed judge answers (counted as not met): {', '.join(malformed)}"
        return Score(
            value={"score": result["score"], "passed": 1.0 if result["passed"] else 0.0},
            answer=answer,
            explanation="\n".join([summary, *lines]),
            metadata={**result, "verdicts": verdicts, "malformed": malformed, "judge_model": str(judge)},
        )

    return score


def epoch_reducers(epochs: int) -> list[str]:
    ks = sorted({k for k in (2**i for i in range(epochs.bit_length())) if k <= epochs} | {epochs})
    return ["mean", *(f"pass_at_{k}" for k in ks), f"pass_k_{epochs}"]


@task
def taskwright(judge_model: str | None = None, judge_samples: int | None = None, epochs: int = 1, message_limit: int = 80) -> Task:
    pack = json.loads((HERE / "pack.json").read_text(encoding="utf-8"))
    return Task(
        dataset=load_samples(),
        solver=world_agent(),
        scorer=rubric_scorer(judge_model=judge_model, judge_samples=judge_samples),
        sandbox="local",
        epochs=Epochs(epochs, epoch_reducers(epochs)),
        message_limit=message_limit,
        metadata={"pack": pack},
    )
