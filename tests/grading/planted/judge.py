"""The scripted model behind the planted set, at the wire: a `responder` for the fake
OpenAI-compatible server (tests/fake_llm.py). It reads each request as the server gets it:

- the judge's (rollouts.grading.judge: "You grade one response…"): for an answer the set
  labels, the label; otherwise a rule: every `require` pattern appears, no `forbid` pattern
  does, and, for a strict criterion, the sentence that gives the evidence does not hedge (a
  strict judge does not count "$40m, $48.5m or $53m" as stating $48.5m);
- the agent's: the task's labelled answers, one per rollout, in order (no tool call);
- anything else (a cheat-writing request): a refusal, as the set runs without a cheat model.
A criterion the set does not know (one an author adds later) is met only by the rules added
for it with `add_rule`."""

import json
import re
import threading
from collections import deque

from tests.fake_llm import Reply
from tests.grading.planted.tasks import C, PlantedTask

# ("may" in lower case only: "31 May 2024" hedges nothing.)
HEDGED = re.compile(
    r"(?i:\bor\b|\beither\b|depending|possibly|perhaps|arguably|\bmight\b|could be|read another way|between .+ and )|\bmay\b"
)
JUDGE_SYSTEM = "You grade one response"


def _sentence_around(text: str, start: int) -> str:
    left = max(text.rfind(". ", 0, start), text.rfind("\n", 0, start), text.rfind("; ", 0, start))
    right = min([i for i in (text.find(". ", start), text.find("\n", start), text.find("; ", start)) if i != -1], default=len(text))
    return text[left + 1:right]


def rule_met(criterion: C, answer: str) -> bool:
    """The rule-based verdict: the criterion's required evidence is there, unhedged when strict."""
    if not criterion.require:
        return False
    for pattern in criterion.require:
        match = re.search(pattern, answer, re.I)
        if match is None:
            return False
        if criterion.strict and HEDGED.search(_sentence_around(answer, match.start())):
            return False
    return not any(re.search(pattern, answer, re.I) for pattern in criterion.forbid)


class ScriptedJudge:
    def __init__(self, tasks: tuple[PlantedTask, ...]) -> None:
        self._lock = threading.Lock()
        self.criteria: dict[tuple[str, str], C] = {}
        self.labels: dict[tuple[str, str], frozenset[str]] = {}
        self.queues: dict[str, deque[str]] = {}
        self.calls = {"judge": 0, "labelled": 0, "rule": 0, "agent": 0, "other": 0}
        for task in tasks:
            for criterion in (*task.strong.criteria, *task.weak.criteria):
                self.criteria[(task.prompt, criterion.text)] = criterion
            for answer in task.answers:
                self.labels[(task.prompt, answer.text.strip())] = answer.meets

    def add_rule(self, prompt: str, criterion: C) -> None:
        with self._lock:
            self.criteria[(prompt, criterion.text)] = criterion

    def queue_answers(self, task: PlantedTask) -> None:
        """The agent answers the task's labelled answers, in order, one per rollout."""
        with self._lock:
            self.queues[task.prompt] = deque(a.text for a in task.answers)

    def verdict(self, prompt: str, answer: str, criterion_text: str) -> tuple[bool, str]:
        criterion = self.criteria.get((prompt, criterion_text))
        if criterion is None:
            return False, "Unknown criterion: not met."
        label = self.labels.get((prompt, answer.strip()))
        if label is not None:
            self.calls["labelled"] += 1
            return criterion.key in label, "The labelled verdict."
        self.calls["rule"] += 1
        met = rule_met(criterion, answer)
        return met, "The required evidence is there." if met else "The required evidence is missing, hedged or contradicted."

    def responder(self, request) -> Reply:
        messages = request.body.get("messages") or []
        system = messages[0]["content"] if messages and messages[0].get("role") == "system" else ""
        if system.startswith(JUDGE_SYSTEM):
            self.calls["judge"] += 1
            prompt, answer, criterion = parse_judge_request(messages[1]["content"])
            met, why = self.verdict(prompt, answer, criterion)
            return Reply(content=json.dumps({"explanation": why, "criteria_met": met}))
        prompt = messages[1]["content"] if len(messages) > 1 else ""
        with self._lock:
            queue = self.queues.get(prompt)
            if queue:
                self.calls["agent"] += 1
                return Reply(content=queue.popleft())
        self.calls["other"] += 1
        return Reply(content="I cannot help with that.")


def parse_judge_request(content: str) -> tuple[str, str, str]:
    """(task prompt, the agent's final answer, the criterion's text) from the judge's user message
    (rollouts.grading.judge.judge_messages lays it out)."""
    task = content.split("# Task given to the agent\n", 1)[1].split("\n\n# The agent's final answer\n", 1)
    prompt, rest = task[0], task[1]
    answer, criterion = rest.rsplit("\n\n# Criterion (", 1)
    for heading in ("\n\n# Files the agent wrote or changed\n", "\n\n# The agent's steps\n"):
        answer = answer.split(heading, 1)[0]
    criterion_text = criterion.split(")\n", 1)[1]
    return prompt, "" if answer == "(empty)" else answer, criterion_text


def judge_by_rules(rule_for) -> object:
    """A responder that judges by rules alone: `rule_for(criterion text)` gives the criterion's
    rule (a C), or None for "not met". For tests where every answer is a probe."""
    def responder(request) -> Reply:
        messages = request.body.get("messages") or []
        if not (messages and str(messages[0].get("content", "")).startswith(JUDGE_SYSTEM)):
            return Reply(content="I cannot help with that.")
        _, answer, criterion_text = parse_judge_request(messages[1]["content"])
        rule = rule_for(criterion_text)
        met = bool(rule and rule_met(rule, answer))
        return Reply(content=json.dumps({"explanation": "By the rule." if met else "Not by the rule.", "criteria_met": met}))

    return responder


def value_rule(criterion_text: str) -> C:
    """A literal judge's reading of a price criterion: one that names a $ value needs that value,
    stated without hedging; one that names none is met by any price."""
    named = re.search(r"\$[\d.,]+(?: ?(?:million|m))?", criterion_text)
    if named:
        return C("named", criterion_text, 1, (re.escape(named.group(0)),), strict=True)
    return C("any", criterion_text, 1, (r"price\D{0,40}\$\s?\d",), strict=True)
