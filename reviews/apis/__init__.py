"""The QA API, one module per subject; this package names the views config.api_urls routes to."""

from reviews.apis.submissions import (
    EnvTaskSubmitApi,
    ReviewClaimNextApi,
    ReviewPolicyApi,
    ReviewQueueApi,
    SubmissionAdjudicateApi,
    SubmissionDecisionApi,
    SubmissionDetailApi,
    SubmissionListApi,
    SubmissionReleaseApi,
    SubmissionWithdrawApi,
)

__all__ = [
    "EnvTaskSubmitApi",
    "ReviewClaimNextApi",
    "ReviewPolicyApi",
    "ReviewQueueApi",
    "SubmissionAdjudicateApi",
    "SubmissionDecisionApi",
    "SubmissionDetailApi",
    "SubmissionListApi",
    "SubmissionReleaseApi",
    "SubmissionWithdrawApi",
]
