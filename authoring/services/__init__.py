"""Every write to worlds, documents, tasks and rubrics. Each function checks the
caller's role in the project, runs in one transaction and refuses stale edits."""

from authoring.services.documents import (
    document_create,
    document_delete,
    document_move,
    document_update,
    document_version_record,
    document_version_restore,
)
from authoring.services.tasks import (
    criterion_add,
    criterion_delete,
    criterion_move,
    criterion_update,
    env_task_create,
    env_task_set_status,
    env_task_snapshot,
    env_task_start_new_version,
    env_task_update,
    rubric_settings_update,
    rubric_version_editable,
    rubric_version_freeze,
)
from authoring.services.worlds import world_create, world_update

__all__ = [
    "criterion_add",
    "criterion_delete",
    "criterion_move",
    "criterion_update",
    "document_create",
    "document_delete",
    "document_move",
    "document_update",
    "document_version_record",
    "document_version_restore",
    "env_task_create",
    "env_task_set_status",
    "env_task_snapshot",
    "env_task_start_new_version",
    "env_task_update",
    "rubric_settings_update",
    "rubric_version_editable",
    "rubric_version_freeze",
    "world_create",
    "world_update",
]
