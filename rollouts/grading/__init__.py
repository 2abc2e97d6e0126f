"""Grading: a rubric version applied to an attempt (a rollout, or a probe answer).

    attempt.py  what a grader sees: prompt, final answer, trajectory, changed files, overlay
    checks.py   deterministic checks (contains, regex, numeric, exact, overlay file/mail checks)
    judge.py    the LLM judge, one criterion at a time, k samples, majority vote
    scoring.py  met points / positive points, clipped to [0, 1]; pass threshold or all-must-pass; per tag
    services.py request, execute (idempotent), regrade, retry failed grades
"""
