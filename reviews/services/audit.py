"""The audit trail's one write: add a line. Nothing updates or deletes one."""

from accounts.models import User
from reviews.models import AuditEvent, Submission


def audit_record(*, project_id: int, verb: str, summary: str, actor: User | None = None, env_task_id: int | None = None,
                 submission: Submission | None = None, data: dict | None = None) -> AuditEvent:
    if submission is not None and env_task_id is None:
        env_task_id = submission.env_task_id
    return AuditEvent.objects.create(
        project_id=project_id,
        env_task_id=env_task_id,
        submission=submission,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        verb=verb,
        summary=summary[:500],
        data=data or {},
    )
