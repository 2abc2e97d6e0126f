"""The API under /api/. Path ids are taken as text and parsed by the views, so a
non-integer id is a clear 400 rather than a bare 404 from the URL resolver."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts import apis as accounts_apis
from authoring import apis as authoring_apis
from authoring.apis import transfer as authoring_transfer_apis
from core.views import api_not_found
from llm import apis as llm_apis
from packs import apis as packs_apis
from reviews import apis as reviews_apis
from reviews.apis import audit as reviews_audit_apis
from reviews.apis import comments as reviews_comment_apis
from reviews.apis import deletion as reviews_deletion_apis
from reviews.apis import notifications as reviews_notification_apis
from reviews.apis.stats import ReviewStatsApi
from rollouts import apis as rollouts_apis
from verification import apis as verification_apis

urlpatterns = [
    # The schema and its docs page are public, as they always were (no project data in them).
    path("schema/", login_not_required(SpectacularAPIView.as_view()), name="api-schema"),
    path("docs/", login_not_required(SpectacularSwaggerSplitView.as_view(url_name="api-schema")), name="api-docs"),
    # accounts
    path("auth/token/", accounts_apis.TokenObtainApi.as_view(), name="api-token"),
    path("projects/", accounts_apis.ProjectListApi.as_view(), name="api-projects"),
    path("projects/<str:pk>/", accounts_apis.ProjectDetailApi.as_view(), name="api-project"),
    path("projects/<str:pk>/members/", accounts_apis.ProjectMembersApi.as_view(), name="api-project-members"),
    path("members/<str:pk>/", accounts_apis.MemberDetailApi.as_view(), name="api-member"),
    # authoring
    path("worlds/", authoring_apis.WorldListApi.as_view(), name="api-worlds"),
    path("worlds/import/", authoring_transfer_apis.WorldImportApi.as_view(), name="api-worlds-import"),
    path("worlds/<str:pk>/export/", authoring_transfer_apis.WorldExportApi.as_view(), name="api-world-export"),
    path("worlds/<str:pk>/", reviews_deletion_apis.WorldDetailApi.as_view(), name="api-world"),  # authoring's, with DELETE
    path("worlds/<str:pk>/documents/", authoring_apis.WorldDocumentListApi.as_view(), name="api-world-documents"),
    path("documents/<str:pk>/", authoring_apis.DocumentDetailApi.as_view(), name="api-document"),
    path("tasks/", authoring_apis.EnvTaskListApi.as_view(), name="api-tasks"),
    path("tasks/<str:pk>/", reviews_deletion_apis.EnvTaskDetailApi.as_view(), name="api-task"),  # authoring's, with DELETE
    path("tasks/<str:pk>/new-version/", authoring_apis.EnvTaskNewVersionApi.as_view(), name="api-task-new-version"),
    path("tasks/<str:pk>/rubric/", authoring_apis.RubricApi.as_view(), name="api-task-rubric"),
    path("tasks/<str:pk>/rubric/criteria/", authoring_apis.CriterionListApi.as_view(), name="api-task-criteria"),
    path("criteria/<str:pk>/", authoring_apis.CriterionDetailApi.as_view(), name="api-criterion"),
    path("tasks/<str:pk>/input-files/", authoring_apis.TaskInputFileListApi.as_view(), name="api-task-input-files"),
    path("task-input-files/<str:pk>/", authoring_apis.TaskInputFileDetailApi.as_view(), name="api-task-input-file"),
    path("task-input-files/<str:pk>/content/", authoring_apis.TaskInputFileContentApi.as_view(), name="api-task-input-file-content"),
    # authoring: files, versions, uploads, consistency
    path("documents/<str:pk>/versions/", authoring_apis.DocumentVersionListApi.as_view(), name="api-document-versions"),
    path("document-versions/<str:pk>/", authoring_apis.DocumentVersionDetailApi.as_view(), name="api-document-version"),
    path("document-versions/<str:pk>/restore/", authoring_apis.DocumentVersionRestoreApi.as_view(), name="api-document-version-restore"),
    path("documents/<str:pk>/file/", authoring_apis.DocumentFileApi.as_view(), name="api-document-file"),
    path("documents/<str:pk>/original/", authoring_apis.DocumentOriginalApi.as_view(), name="api-document-original"),
    path("worlds/<str:pk>/uploads/", authoring_apis.WorldUploadApi.as_view(), name="api-world-uploads"),
    path("worlds/<str:pk>/consistency/", authoring_apis.WorldConsistencyApi.as_view(), name="api-world-consistency"),
    # authoring: drafting
    path("worlds/<str:pk>/suggest-skeleton/", authoring_apis.WorldSuggestSkeletonApi.as_view(), name="api-world-suggest-skeleton"),
    path("skeleton-proposals/<str:pk>/", authoring_apis.SkeletonProposalDetailApi.as_view(), name="api-skeleton-proposal"),
    path("skeleton-proposals/<str:pk>/accept/", authoring_apis.SkeletonAcceptApi.as_view(), name="api-skeleton-accept"),
    path("worlds/<str:pk>/draft/", authoring_apis.WorldDraftApi.as_view(), name="api-world-draft"),
    path("draft-runs/<str:pk>/", authoring_apis.DraftRunDetailApi.as_view(), name="api-draft-run"),
    path("draft-runs/<str:pk>/cancel/", authoring_apis.DraftRunCancelApi.as_view(), name="api-draft-run-cancel"),
    path("draft-jobs/<str:pk>/retry/", authoring_apis.DraftJobRetryApi.as_view(), name="api-draft-job-retry"),
    # llm
    path("model-endpoints/", llm_apis.ModelEndpointListApi.as_view(), name="api-model-endpoints"),
    path("model-endpoints/<str:pk>/", llm_apis.ModelEndpointDetailApi.as_view(), name="api-model-endpoint"),
    path("model-calls/", authoring_apis.ModelCallListApi.as_view(), name="api-model-calls"),
    # rollouts: trial batches, rollouts, steps
    path("tasks/<str:pk>/batches/", rollouts_apis.TaskBatchListApi.as_view(), name="api-task-batches"),
    path("batches/<str:pk>/", rollouts_apis.BatchDetailApi.as_view(), name="api-batch"),
    path("batches/<str:pk>/rollouts/", rollouts_apis.BatchRolloutListApi.as_view(), name="api-batch-rollouts"),
    path("batches/<str:pk>/cancel/", rollouts_apis.BatchCancelApi.as_view(), name="api-batch-cancel"),
    path("rollouts/<str:pk>/", rollouts_apis.RolloutDetailApi.as_view(), name="api-rollout"),
    path("steps/<str:pk>/comments/", rollouts_apis.StepCommentListApi.as_view(), name="api-step-comments"),
    # verification: verifier quality (grades, expert verdicts, ranking, regrade, difficulty, probes, grading settings)
    path("batches/<str:pk>/grades/", verification_apis.BatchGradesApi.as_view(), name="api-batch-grades"),
    path("batches/<str:pk>/expert-verdicts/", verification_apis.ExpertVerdictApi.as_view(), name="api-batch-expert-verdicts"),
    path("batches/<str:pk>/agreement/", verification_apis.BatchAgreementApi.as_view(), name="api-batch-agreement"),
    path("batches/<str:pk>/ranking/", verification_apis.BatchRankingApi.as_view(), name="api-batch-ranking"),
    path("batches/<str:pk>/regrade/", verification_apis.BatchRegradeApi.as_view(), name="api-batch-regrade"),
    path(
        "batches/<str:pk>/retry-failed-grades/", verification_apis.BatchRetryFailedGradesApi.as_view(), name="api-batch-retry-failed-grades"
    ),
    path("batches/<str:pk>/cancel-grading/", verification_apis.BatchCancelGradingApi.as_view(), name="api-batch-cancel-grading"),
    path("batches/<str:pk>/difficulty/", verification_apis.BatchDifficultyApi.as_view(), name="api-batch-difficulty"),
    path("tasks/<str:pk>/probe-runs/", verification_apis.ProbeRunListApi.as_view(), name="api-task-probe-runs"),
    path("probe-runs/<str:pk>/", verification_apis.ProbeRunDetailApi.as_view(), name="api-probe-run"),
    path("probe-runs/<str:pk>/cancel/", verification_apis.ProbeRunCancelApi.as_view(), name="api-probe-run-cancel"),
    path("tasks/<str:pk>/rubric/settings/", verification_apis.RubricSettingsApi.as_view(), name="api-task-rubric-settings"),
    # reviews
    path("tasks/<str:pk>/submit/", reviews_apis.EnvTaskSubmitApi.as_view(), name="api-task-submit"),
    path("submissions/", reviews_apis.SubmissionListApi.as_view(), name="api-submissions"),
    path("submissions/<str:pk>/", reviews_apis.SubmissionDetailApi.as_view(), name="api-submission"),
    path("submissions/<str:pk>/release/", reviews_apis.SubmissionReleaseApi.as_view(), name="api-submission-release"),
    path("submissions/<str:pk>/decision/", reviews_apis.SubmissionDecisionApi.as_view(), name="api-submission-decision"),
    path("submissions/<str:pk>/withdraw/", reviews_apis.SubmissionWithdrawApi.as_view(), name="api-submission-withdraw"),
    path("submissions/<str:pk>/adjudicate/", reviews_apis.SubmissionAdjudicateApi.as_view(), name="api-submission-adjudicate"),
    path("projects/<str:pk>/review-policy/", reviews_apis.ReviewPolicyApi.as_view(), name="api-review-policy"),
    path("review-queue/", reviews_apis.ReviewQueueApi.as_view(), name="api-review-queue"),
    path("review-queue/claim-next/", reviews_apis.ReviewClaimNextApi.as_view(), name="api-review-claim-next"),
    path("review-stats/", ReviewStatsApi.as_view(), name="api-review-stats"),
    # reviews: audit trail and notifications
    path("tasks/<str:pk>/audit/", reviews_audit_apis.TaskAuditApi.as_view(), name="api-task-audit"),
    path("projects/<str:pk>/audit/", reviews_audit_apis.ProjectAuditApi.as_view(), name="api-project-audit"),
    path("notifications/", reviews_notification_apis.NotificationListApi.as_view(), name="api-notifications"),
    path("notifications/read/", reviews_notification_apis.NotificationReadApi.as_view(), name="api-notifications-read"),
    path("tasks/<str:pk>/comments/", reviews_comment_apis.TaskCommentListApi.as_view(), name="api-task-comments"),
    path("comments/<str:pk>/reply/", reviews_comment_apis.CommentReplyApi.as_view(), name="api-comment-reply"),
    path("comments/<str:pk>/resolve/", reviews_comment_apis.CommentResolveApi.as_view(), name="api-comment-resolve"),
    path("comments/<str:pk>/reopen/", reviews_comment_apis.CommentReopenApi.as_view(), name="api-comment-reopen"),
    # packs
    path("packs/", packs_apis.PackListApi.as_view(), name="api-packs"),
    path("packs/import/", packs_apis.PackImportApi.as_view(), name="api-packs-import"),
    path("packs/<str:pk>/", packs_apis.PackDetailApi.as_view(), name="api-pack"),
    path("packs/<str:pk>/cancel/", packs_apis.PackCancelApi.as_view(), name="api-pack-cancel"),
    path("packs/<str:pk>/download/", packs_apis.PackDownloadApi.as_view(), name="api-pack-download"),
    path("packs/<str:pk>/download/<slug:key>/", packs_apis.PackFormatDownloadApi.as_view(), name="api-pack-download-format"),
    path("packs/<str:pk>/versions/", packs_apis.PackVersionsApi.as_view(), name="api-pack-versions"),
    path("packs/<str:pk>/diff/", packs_apis.PackDiffApi.as_view(), name="api-pack-diff"),
    # Anything else under /api/: a JSON 404 naming the docs, with DEBUG on too (Django's
    # debug 404 page would answer in HTML; handler404 answers JSON only with DEBUG off).
    re_path(r"", login_not_required(api_not_found), name="api-not-found"),
]
