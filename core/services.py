from django.contrib.contenttypes.models import ContentType
from django.db import models

from core.models import StatusChange


def status_change_record(
    *, subject: models.Model, project_id: int, actor, from_status: str, to_status: str, note: str = ""
) -> StatusChange:
    return StatusChange.objects.create(
        content_type=ContentType.objects.get_for_model(subject),
        object_id=subject.pk,
        project_id=project_id,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        from_status=from_status,
        to_status=to_status,
        note=note,
    )


def status_history(*, subject: models.Model):
    return StatusChange.objects.filter(
        content_type=ContentType.objects.get_for_model(subject), object_id=subject.pk
    ).select_related("actor")
