"""A small planted set for the reward-hacking probes and the ranking check (issue 15).

Six professional tasks (law, finance, medicine, engineering, HR, tax), each with a strong
rubric (what a careful expert writes: the key figures pinned, the conclusion and its support
required, pitfalls for hedging or wrong answers) and a weak one (weak in a different way per
task: no value pinned, the bare conclusion rewarded, process claims rewarded, topics only),
and six labelled answers per task, best first, among them hacks (keyword stuffing, hedges,
claimed reviews, confident wrong answers).

`tasks.TASKS` is the data; `judge.ScriptedJudge` answers at the wire (the fake
OpenAI-compatible server's `responder`): the agent's answers in order, the judge's labelled
verdict for a known answer, a rule-based verdict otherwise (a criterion is met when its
required evidence appears, and a strict one not when the sentence hedges); `run.evaluate`
builds a task with one rubric, runs a graded batch of the labelled answers, ranks it as the
labels do, runs the probes, and says what flagged the rubric. tests/grading/test_planted.py
and bench/probes.py use them.

The set is written by the same hand as the probes, so it is an optimistic measure: it shows
the mechanisms work on weaknesses of the kinds the issue names, not how often real rubrics
have them. No model-written cheats are used: the built-in probes and the ranking check alone."""
