"""An admin's writes to the project's QA policy and checklist."""

from django.db import transaction
from django.db.models import Max

from accounts.models import Project, User
from accounts.selectors import membership_get
from accounts.services import require_role
from core.exceptions import ApplicationError
from reviews.models import AuditVerb, ChecklistItem, ReviewPolicy
from reviews.selectors.policy import DEFAULT_CHECKLIST
from reviews.services.audit import audit_record

POLICY_FIELDS = ("approvals_required", "gate_graded_rollouts", "min_graded_rollouts", "gate_probes", "gate_difficulty",
                 "pass1_ceiling", "passk_floor", "queue_alert_threshold")


@transaction.atomic
def checklist_ensure(*, project_id: int) -> None:
    """Save the default checklist for a project that never had one. Idempotent: the project
    row is locked, so two first submissions at once save the defaults once."""
    Project.objects.select_for_update().filter(pk=project_id).first()
    if not ChecklistItem.objects.filter(project_id=project_id).exists():
        ChecklistItem.objects.bulk_create(
            [ChecklistItem(project_id=project_id, text=text, position=i) for i, text in enumerate(DEFAULT_CHECKLIST)]
        )


def _admin(user: User, project_id: int) -> None:
    require_role(membership_get(user=user, project_id=project_id), "administer")


def _clean_policy(fields: dict) -> dict:
    cleaned = {}
    for name, value in fields.items():
        if name not in POLICY_FIELDS:
            raise ApplicationError(f"Unknown setting: {name}.")
        cleaned[name] = value
    if "approvals_required" in cleaned and not 1 <= int(cleaned["approvals_required"]) <= 5:
        raise ApplicationError("Approvals needed must be between 1 and 5.")
    if "min_graded_rollouts" in cleaned and not 1 <= int(cleaned["min_graded_rollouts"]) <= 1000:
        raise ApplicationError("Graded rollouts needed must be between 1 and 1,000.")
    for name in ("pass1_ceiling", "passk_floor"):
        if name in cleaned and not 0 <= float(cleaned[name]) <= 1:
            raise ApplicationError("The pass@1 ceiling and the pass@k floor are between 0 and 1.")
    if "queue_alert_threshold" in cleaned and not 0 <= int(cleaned["queue_alert_threshold"]) <= 100_000:
        raise ApplicationError("The queue alert is a number of waiting submissions (0 for never).")
    return cleaned


@transaction.atomic
def review_policy_update(*, project_id: int, user: User, **fields) -> ReviewPolicy:
    _admin(user, project_id)
    cleaned = _clean_policy(fields)
    policy, _ = ReviewPolicy.objects.select_for_update().get_or_create(project_id=project_id)
    changed = {name: value for name, value in cleaned.items() if getattr(policy, name) != value}
    if not changed:
        return policy
    for name, value in changed.items():
        setattr(policy, name, value)
    policy.save(update_fields=[*changed, "updated_at"])
    audit_record(project_id=project_id, verb=AuditVerb.POLICY_CHANGED, actor=user,
                 summary="Review policy: " + ", ".join(f"{name.replace('_', ' ')} = {value}" for name, value in changed.items()),
                 data=dict(changed))
    return policy


def _clean_text(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise ApplicationError("Write the checklist question.")
    if len(text) > 300:
        raise ApplicationError("A checklist question holds at most 300 characters.")
    return text


@transaction.atomic
def checklist_item_add(*, project_id: int, user: User, text: str) -> ChecklistItem:
    _admin(user, project_id)
    checklist_ensure(project_id=project_id)
    position = (ChecklistItem.objects.filter(project_id=project_id).aggregate(n=Max("position"))["n"] or 0) + 1
    item = ChecklistItem.objects.create(project_id=project_id, text=_clean_text(text), position=position)
    audit_record(project_id=project_id, verb=AuditVerb.CHECKLIST_CHANGED, actor=user, summary=f"Added checklist item “{item.text}”")
    return item


@transaction.atomic
def checklist_item_update(*, item: ChecklistItem, user: User, text: str) -> ChecklistItem:
    """A new wording. Answers already given keep the wording they answered."""
    _admin(user, item.project_id)
    old, item.text = item.text, _clean_text(text)
    if old != item.text:
        item.save(update_fields=["text", "updated_at"])
        audit_record(project_id=item.project_id, verb=AuditVerb.CHECKLIST_CHANGED, actor=user,
                     summary=f"Reworded checklist item “{old}” as “{item.text}”")
    return item


@transaction.atomic
def checklist_item_retire(*, item: ChecklistItem, user: User) -> ChecklistItem:
    """Take an item off the checklist; the answers given to it stay."""
    _admin(user, item.project_id)
    if ChecklistItem.objects.filter(project_id=item.project_id, active=True).exclude(pk=item.pk).count() == 0:
        raise ApplicationError("The checklist needs at least one item.")
    if item.active:
        item.active = False
        item.save(update_fields=["active", "updated_at"])
        audit_record(project_id=item.project_id, verb=AuditVerb.CHECKLIST_CHANGED, actor=user,
                     summary=f"Removed checklist item “{item.text}”")
    return item
