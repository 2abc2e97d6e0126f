"""Limits of a batch of trial runs, shared by the services that check them and the Celery
task whose time limit is derived from them (rollouts.tasks imports nothing of the services)."""

MAX_ROLLOUTS = 64
LIMITS = {
    "n": (1, MAX_ROLLOUTS),
    "max_steps": (1, 200),
    "max_output_tokens": (16, 200_000),
    "time_limit_seconds": (10, 3_600),
}
TASK_TIME_MARGIN = 120  # seconds the Celery hard limit allows beyond a rollout's own
GRADE_TIME_LIMIT = 30 * 60  # seconds a grading attempt may run (the Celery limit, and the job's deadline on any pool)
