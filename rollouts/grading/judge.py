"""The LLM judge, HealthBench style: one call per criterion and sample, returning
{"explanation", "criteria_met"} and, when it is shown the agent's steps, "steps": the step
numbers its verdict rests on (optional: grades from before it was asked have none, and a
judge that leaves it out still gives a valid verdict); k samples, the majority decides (a
tie is 'not met').
For a negative criterion the judge says whether the bad behaviour is present.
The prompt is built here and shown to the author as is."""

from dataclasses import dataclass

from llm.client import chat
from llm.models import CallPurpose, ModelEndpoint
from rollouts.grading.attempt import Attempt

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "criteria_met": {"type": "boolean"},
        "steps": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["explanation", "criteria_met"],
    "additionalProperties": False,
}
SEES = ("answer", "files", "trajectory")
MAX_CITED_STEPS = 50

SYSTEM = (
    "You grade one response against one rubric criterion. Judge only what is in front of you: "
    "the criterion is met if the response clearly satisfies it. Some criteria describe something "
    "undesirable (they carry negative points); for those, criteria_met means the undesirable thing "
    "IS present. Be strict: vague, hedged or unsupported statements do not meet a criterion that "
    "asks for a specific fact. Reply only with JSON: {\"explanation\": ..., \"criteria_met\": true|false}. "
    "When you are shown the agent's steps, add \"steps\": the numbers of the steps your verdict rests on (cite them as "
    "\"step 3\" in the explanation too)."
)


def judge_messages(*, criterion_text: str, points: int, attempt: Attempt, sees: list[str]) -> list[dict]:
    parts = [f"# Task given to the agent\n{attempt.prompt}", f"# The agent's final answer\n{attempt.answer or '(empty)'}"]
    if "files" in sees and attempt.changed_files:
        files = "\n\n".join(f"## {path}\n{text[:8000]}" for path, text in attempt.changed_files[:10])
        parts.append(f"# Files the agent wrote or changed\n{files}")
    if "trajectory" in sees and attempt.trajectory:
        parts.append(f"# The agent's steps (numbered as the author sees them)\n{attempt.trajectory[-30000:]}")
    kind = "an undesirable behaviour (negative points)" if points < 0 else "a requirement"
    parts.append(f"# Criterion ({kind}, {points:+d} points)\n{criterion_text}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


@dataclass
class JudgeOutcome:
    met: bool
    rationale: str
    samples: list[dict]
    disagreement: float


def judge(
    *, endpoint: ModelEndpoint, criterion_text: str, points: int, attempt: Attempt, sees: list[str], samples: int, project_id: int | None
) -> JudgeOutcome:
    """Raises llm.errors.ModelError when the judge cannot give a valid verdict (after the
    client's retries): a malformed judge answer is never counted as met."""
    messages = judge_messages(criterion_text=criterion_text, points=points, attempt=attempt, sees=sees)
    votes = []
    for _ in range(max(1, samples)):
        result = chat(endpoint=endpoint, messages=messages, purpose=CallPurpose.JUDGE, project_id=project_id, schema=JUDGE_SCHEMA,
                      temperature=None if samples == 1 else 1.0)
        vote = {"met": bool(result.structured["criteria_met"]), "explanation": str(result.structured["explanation"])[:4000]}
        steps = result.structured.get("steps")
        if isinstance(steps, list):  # (kept with the sample: the trajectory page links the verdict to these steps)
            vote["steps"] = sorted({n for n in steps if isinstance(n, int) and not isinstance(n, bool) and n > 0})[:MAX_CITED_STEPS]
        votes.append(vote)
    yes = sum(1 for v in votes if v["met"])
    met = yes * 2 > len(votes)
    majority = [v for v in votes if v["met"] == met]
    return JudgeOutcome(
        met=met, rationale=majority[0]["explanation"], samples=votes, disagreement=(len(votes) - len(majority)) / len(votes)
    )
