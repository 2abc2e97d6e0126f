"""How a Taskwright rubric is graded, restated without Taskwright (standard library only),
so that the pack's scorer grades exactly as Taskwright does.

- Each criterion is graded on its own. An "llm_judge" criterion goes to the judge model,
  HealthBench style: one call (or `judge_samples` calls, the majority decides; a tie is
  "not met") returning {"explanation": str, "criteria_met": bool}. An answer that is not
  that JSON counts as NOT met, and is recorded as malformed.
- A "check" criterion runs its deterministic check on the final answer (contains,
  not_contains, regex, exact, numeric). Checks on what the agent wrote (file_exists,
  file_contains, xlsx_cell, email_sent) are not met: the world here is read-only, so the
  agent wrote nothing (Taskwright says "not written by the agent" in the same case).
- For a negative criterion (a pitfall) "met" means the bad behaviour is present.
- Score = points of met criteria / sum of positive points, clipped to [0, 1]; passed when
  the score is at or above pass_threshold, or, with all_must_pass, when every positive
  criterion is met and no pitfall is.
"""

import json
import re

JUDGE_SYSTEM = (
    "You grade one response against one rubric criterion. Judge only what is in front of you: "
    "the criterion is met if the response clearly satisfies it. Some criteria describe something "
    "undesirable (they carry negative points); for those, criteria_met means the undesirable thing "
    "IS present. Be strict: vague, hedged or unsupported statements do not meet a criterion that "
    'asks for a specific fact. Reply only with JSON: {"explanation": ..., "criteria_met": true|false}.'
)
ANSWER_CHECKS = ("contains", "not_contains", "regex", "exact", "numeric")
ARTIFACT_CHECKS = ("file_exists", "file_contains", "xlsx_cell", "email_sent")


class CheckError(ValueError):
    """A check criterion whose settings cannot run: the grade fails rather than guessing."""


def judge_user_message(*, prompt: str, answer: str, criterion_text: str, points: int, trajectory: str = "") -> str:
    parts = [f"# Task given to the agent\n{prompt}", f"# The agent's final answer\n{answer or '(empty)'}"]
    if trajectory:
        parts.append(f"# The agent's steps\n{trajectory[-30000:]}")
    kind = "an undesirable behaviour (negative points)" if points < 0 else "a requirement"
    parts.append(f"# Criterion ({kind}, {points:+d} points)\n{criterion_text}")
    return "\n\n".join(parts)


def parse_verdict(text: str) -> tuple[bool | None, str]:
    """(criteria_met, explanation) from a judge's reply; criteria_met is None when the reply
    holds no JSON object with a boolean "criteria_met" and a string "explanation"."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text or ""):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("criteria_met"), bool) and isinstance(value.get("explanation"), str):
            return value["criteria_met"], value["explanation"]
    return None, f"Malformed judge answer (not met): {(text or '').strip()[:500]!r}"


def majority(votes: list[bool | None]) -> bool:
    """Met when more than half of the votes say met; a malformed vote is a 'not met'."""
    return sum(1 for vote in votes if vote is True) * 2 > len(votes) if votes else False


def aggregate(criteria: list[dict], met: dict[str, bool], *, pass_threshold: float, all_must_pass: bool) -> dict:
    """Taskwright's grade from per-criterion verdicts (`met` by criterion id; a missing one
    is not met). `criteria`: dicts with id, points and tag."""

    def ratio(met_points: int, positive: int) -> float:
        return max(0.0, min(1.0, met_points / positive)) if positive else 0.0

    met_points = sum(c["points"] for c in criteria if met.get(c["id"]))
    positive = sum(c["points"] for c in criteria if c["points"] > 0)
    value = ratio(met_points, positive)
    if all_must_pass:
        passed = all(met.get(c["id"]) for c in criteria if c["points"] > 0) and not any(
            met.get(c["id"]) for c in criteria if c["points"] < 0
        )
    else:
        passed = value >= pass_threshold
    per_tag = {}
    for tag in sorted({c["tag"] for c in criteria}):
        subset = [c for c in criteria if c["tag"] == tag]
        tag_positive = sum(c["points"] for c in subset if c["points"] > 0)
        tag_met = sum(c["points"] for c in subset if met.get(c["id"]))
        per_tag[tag] = {
            "met_points": tag_met,
            "positive_points": tag_positive,
            "score": ratio(tag_met, tag_positive) if tag_positive else None,
        }
    return {"score": value, "passed": bool(passed), "met_points": met_points, "positive_points": positive, "per_tag": per_tag}


# -- deterministic checks (Taskwright's rollouts.grading.checks, on the final answer) -----------------

_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mm": 1e6, "million": 1e6, "bn": 1e9, "b": 1e9, "billion": 1e9, "%": 1}
NUMBER = re.compile(r"(-?\d[\d,]*(?:\.\d+)?)\s*(k|thousand|mm|m|million|bn|b|billion|%)?\b", re.I)


def numbers_in(text: str) -> list[float]:
    values = []
    for match in NUMBER.finditer(text.replace("\u00a0", " ")):
        try:
            value = float(match.group(1).replace(",", ""))
        except ValueError:
            continue
        suffix = (match.group(2) or "").lower()
        values.append(value * _SCALE.get(suffix, 1) if suffix != "%" else value)
    return values


def _need(config: dict, key: str) -> object:
    if config.get(key) in (None, ""):
        raise CheckError(f"The check is missing its {key!r} setting.")
    return config[key]


def run_check(config: dict, answer: str) -> tuple[bool, str]:
    """(met, rationale) of a check criterion's `grader_config` on the final answer."""
    kind = config.get("check")
    answer = answer or ""
    if kind in ("contains", "not_contains"):
        value = str(_need(config, "value"))
        found = value in answer if config.get("case_sensitive") else value.lower() in answer.lower()
        met = found if kind == "contains" else not found
        return met, f"The answer {'contains' if found else 'does not contain'} {value!r}."
    if kind == "regex":
        pattern = str(_need(config, "pattern"))
        flags = re.IGNORECASE if "i" in str(config.get("flags", "")) else 0
        try:
            found = re.search(pattern, answer, flags)
        except re.error as exc:
            raise CheckError(f"The regular expression is invalid: {exc}.") from None
        return bool(found), (f"Matched {found.group(0)[:100]!r}." if found else "No match.")
    if kind == "exact":
        want = " ".join(str(_need(config, "value")).split()).lower()
        got = " ".join(answer.split()).lower()
        return got == want, "The answer is exactly the expected text." if got == want else "The answer differs from the expected text."
    if kind == "numeric":
        try:
            want = float(_need(config, "value"))
            tolerance = float(config.get("tolerance", 0))
        except (TypeError, ValueError):
            raise CheckError("The numeric check needs a number and a tolerance.") from None
        limit = abs(want) * tolerance if config.get("relative") else tolerance
        close = [v for v in numbers_in(answer) if abs(v - want) <= limit]
        return bool(close), (f"Found {close[0]:g}, within {limit:g} of {want:g}." if close else f"No number within {limit:g} of {want:g}.")
    if kind in ARTIFACT_CHECKS:
        return False, f"The {kind} check looks at what the agent wrote; this world is read-only, so the agent wrote nothing."
    raise CheckError(f"Unknown check {kind!r}; choose one of {', '.join(ANSWER_CHECKS + ARTIFACT_CHECKS)}.")
