from django.urls import path

from verification import views

urlpatterns = [
    path("tasks/<int:task_pk>/verifier/", views.task_verifier, name="task-verifier"),
    path("tasks/<int:task_pk>/verifier/settings/", views.task_rubric_settings, name="task-rubric-settings"),
    path("tasks/<int:task_pk>/verifier/judge-prompt/", views.task_judge_prompt, name="task-judge-prompt"),
    path("tasks/<int:task_pk>/verifier/probes/", views.task_probes, name="task-probes"),
    path("tasks/<int:task_pk>/verifier/probes/cancel/", views.task_probes_cancel, name="task-probes-cancel"),
    path("batches/<int:pk>/quality/", views.batch_quality, name="batch-quality"),
    path("batches/<int:pk>/quality/verdicts/", views.batch_expert_verdict, name="batch-expert-verdict"),
    path("batches/<int:pk>/quality/ranking/", views.batch_ranking, name="batch-ranking"),
    path("batches/<int:pk>/quality/regrade/", views.batch_regrade_view, name="batch-regrade"),
    path("batches/<int:pk>/quality/retry-failed/", views.batch_retry_failed_view, name="batch-retry-failed"),
    path("batches/<int:pk>/quality/cancel-grading/", views.batch_grading_cancel_view, name="batch-grading-cancel"),
]
