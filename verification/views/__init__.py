"""HTML views of the verifier's quality tools: the Verifier panel of the task page
(panel.py) and the batch quality page (batch.py). verification.selectors assembles what
they and the API (verification.apis) show; plots.py lays out the inline-SVG plots.

Who may do what (the services enforce it; tests/test_permission_matrix.py checks it):
every member of the project reads the panel and the quality page; authors and reviewers
set expert verdicts and rankings (each their own); only authors (and admins) change the
rubric's grading settings, run probes (they spend model calls), regrade, retry failed grades and cancel grading or probes. Outsiders get
404, anonymous visitors the sign-in page."""

from verification.views.batch import (
    batch_expert_verdict,
    batch_grading_cancel_view,
    batch_quality,
    batch_ranking,
    batch_regrade_view,
    batch_retry_failed_view,
)
from verification.views.panel import task_judge_prompt, task_probes, task_probes_cancel, task_rubric_settings, task_verifier

__all__ = [
    "batch_expert_verdict",
    "batch_grading_cancel_view",
    "batch_quality",
    "batch_ranking",
    "batch_regrade_view",
    "batch_retry_failed_view",
    "task_judge_prompt",
    "task_probes",
    "task_probes_cancel",
    "task_rubric_settings",
    "task_verifier",
]
