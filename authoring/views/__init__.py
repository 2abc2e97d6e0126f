from authoring.views.drafting import (
    document_download,
    document_draft,
    document_draft_status,
    document_source_download,
    document_version_restore,
    document_versions,
    draft_job_retry,
    draft_run_cancel,
    draft_run_progress,
    skeleton_accept,
    skeleton_proposal,
    world_consistency,
    world_draft_all,
    world_suggest_skeleton,
    world_upload,
)
from authoring.views.editors import (
    criterion_add,
    criterion_delete,
    criterion_move,
    criterion_row,
    document_add,
    document_delete,
    document_editor,
    document_move,
    document_preview,
    document_row,
    task_create,
    task_editor,
    world_editor,
)
from authoring.views.project import project_detail, project_task_create, world_create
from authoring.views.skeletons import skeleton_item, skeleton_item_add, skeleton_item_reject
from authoring.views.task_files import task_input_file_delete, task_input_file_download, task_input_files_upload
from authoring.views.transfer import world_export, world_import

__all__ = [
    "criterion_add", "criterion_delete", "criterion_move", "criterion_row", "document_add", "document_delete",
    "document_download", "document_draft", "document_draft_status", "document_editor", "document_move", "document_preview", "document_row",
    "document_source_download", "document_version_restore", "document_versions", "draft_job_retry", "draft_run_cancel",
    "draft_run_progress", "project_detail", "project_task_create", "skeleton_accept",
    "skeleton_item", "skeleton_item_add", "skeleton_item_reject", "skeleton_proposal", "task_create", "task_editor",
    "task_input_file_delete", "task_input_file_download", "task_input_files_upload",
    "world_consistency", "world_create", "world_draft_all", "world_editor", "world_export", "world_import", "world_suggest_skeleton",
    "world_upload",
]
