"""The reads of QA, scoped by membership (reviews.selectors.<module> holds each; this package names them all)."""

from reviews.selectors.deletion import Deletion, env_task_deletion, world_deletion
from reviews.selectors.gates import Gate, submit_gates, unexplained_probes
from reviews.selectors.policy import DEFAULT_CHECKLIST, checklist_items, review_policy_for_project
from reviews.selectors.queue import (
    adjudication_queue_for_user,
    approved_submissions_for_project,
    claim_cutoff,
    review_claimed_by_user,
    review_queue_for_user,
    reviews_for_task,
    reviews_visible_to,
    submission_get_for_user,
    submission_latest_for_task,
    submission_list_for_user,
    submission_previous,
    submissions_blind_to,
    submissions_waiting_count,
    with_visible_reviews,
)

__all__ = [
    "DEFAULT_CHECKLIST",
    "Deletion",
    "Gate",
    "adjudication_queue_for_user",
    "approved_submissions_for_project",
    "checklist_items",
    "claim_cutoff",
    "env_task_deletion",
    "review_claimed_by_user",
    "review_policy_for_project",
    "review_queue_for_user",
    "reviews_for_task",
    "reviews_visible_to",
    "submission_get_for_user",
    "submission_latest_for_task",
    "submission_list_for_user",
    "submission_previous",
    "submissions_blind_to",
    "submissions_waiting_count",
    "submit_gates",
    "unexplained_probes",
    "with_visible_reviews",
    "world_deletion",
]
