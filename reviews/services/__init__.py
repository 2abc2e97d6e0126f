"""The writes of QA (reviews.services.<module> holds each; this package names them all)."""

from reviews.services.audit import audit_record
from reviews.services.deletion import env_task_delete, world_delete
from reviews.services.notifications import notifications_mark_read, notify
from reviews.services.policy import (
    checklist_ensure,
    checklist_item_add,
    checklist_item_retire,
    checklist_item_update,
    review_policy_update,
)
from reviews.services.submissions import (
    ChecklistMark,
    probe_explain,
    review_decide,
    submission_adjudicate,
    submission_claim_next,
    submission_create,
    submission_release,
    submission_withdraw,
)

__all__ = [
    "ChecklistMark",
    "audit_record",
    "checklist_ensure",
    "checklist_item_add",
    "checklist_item_retire",
    "checklist_item_update",
    "env_task_delete",
    "notifications_mark_read",
    "notify",
    "probe_explain",
    "review_decide",
    "review_policy_update",
    "submission_adjudicate",
    "submission_claim_next",
    "submission_create",
    "submission_release",
    "submission_withdraw",
    "world_delete",
]
