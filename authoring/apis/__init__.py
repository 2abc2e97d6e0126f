"""The authoring API: worlds, documents, tasks and rubrics, drafting. Thin: parse, call one
selector or service, serialize. Access rules live in the selectors (404 outside your
projects) and the services (role checks, stale edits → 409).

config/api_urls.py imports the views from here; each module holds one area."""

from authoring.apis.documents import (
    DocumentDetailApi,
    DocumentFileApi,
    DocumentOriginalApi,
    DocumentVersionDetailApi,
    DocumentVersionListApi,
    DocumentVersionRestoreApi,
    WorldDocumentListApi,
    WorldUploadApi,
)
from authoring.apis.drafting import (
    DraftJobRetryApi,
    DraftRunCancelApi,
    DraftRunDetailApi,
    SkeletonAcceptApi,
    SkeletonProposalDetailApi,
    WorldDraftApi,
    WorldSuggestSkeletonApi,
)
from authoring.apis.task_files import TaskInputFileContentApi, TaskInputFileDetailApi, TaskInputFileListApi
from authoring.apis.tasks import (
    CriterionDetailApi,
    CriterionListApi,
    EnvTaskDetailApi,
    EnvTaskListApi,
    EnvTaskNewVersionApi,
    RubricApi,
)
from authoring.apis.usage import ModelCallListApi
from authoring.apis.worlds import WorldConsistencyApi, WorldDetailApi, WorldListApi

__all__ = [
    "CriterionDetailApi",
    "CriterionListApi",
    "DocumentDetailApi",
    "DocumentFileApi",
    "DocumentOriginalApi",
    "DocumentVersionDetailApi",
    "DocumentVersionListApi",
    "DocumentVersionRestoreApi",
    "DraftJobRetryApi",
    "DraftRunCancelApi",
    "DraftRunDetailApi",
    "EnvTaskDetailApi",
    "EnvTaskListApi",
    "EnvTaskNewVersionApi",
    "ModelCallListApi",
    "RubricApi",
    "SkeletonAcceptApi",
    "SkeletonProposalDetailApi",
    "TaskInputFileContentApi",
    "TaskInputFileDetailApi",
    "TaskInputFileListApi",
    "WorldConsistencyApi",
    "WorldDetailApi",
    "WorldDocumentListApi",
    "WorldDraftApi",
    "WorldListApi",
    "WorldSuggestSkeletonApi",
    "WorldUploadApi",
]
