from django.urls import path

from reviews.views import audit, comments, deletion, notifications, queue, review_settings, stats, submission
from reviews.views.versions import prompt_versions

urlpatterns = [
    path("", queue.dashboard, name="dashboard"),
    # The author's side, on the task page
    path("tasks/<int:task_pk>/reviews/", queue.task_reviews, name="task-reviews"),
    path("tasks/<int:pk>/delete/", deletion.task_delete, name="task-delete"),
    path("worlds/<int:pk>/delete/", deletion.world_delete, name="world-delete"),
    path("tasks/<int:task_pk>/submit/", queue.task_submit, name="task-submit"),
    path("tasks/<int:task_pk>/probes/<int:probe_pk>/explain/", queue.probe_explain, name="probe-explain"),
    path("tasks/<int:task_pk>/prompt-versions/", prompt_versions, name="prompt-versions"),
    path("submissions/<int:pk>/withdraw/", queue.submission_withdraw, name="submission-withdraw"),
    # The reviewer's side
    path("reviews/", queue.review_queue, name="review-queue"),
    path("reviews/claim-next/", queue.claim_next, name="review-claim-next"),
    path("reviews/stats/", stats.review_stats, name="review-stats"),
    path("submissions/<int:pk>/", submission.submission_review, name="submission-review"),
    path("submissions/<int:pk>/input-files/<int:number>/", submission.submission_input_file, name="submission-input-file"),
    path("submissions/<int:pk>/decide/", submission.submission_decide, name="submission-decide"),
    path("submissions/<int:pk>/release/", submission.submission_release, name="submission-release"),
    path("submissions/<int:pk>/adjudicate/", submission.submission_adjudicate, name="submission-adjudicate"),
    # The admin's QA settings
    path("projects/<int:project_pk>/review-settings/", review_settings.review_settings, name="review-settings"),
    path("projects/<int:project_pk>/review-settings/policy/", review_settings.policy_update, name="review-policy-update"),
    path("projects/<int:project_pk>/review-settings/checklist/", review_settings.checklist_add, name="checklist-add"),
    path("projects/<int:project_pk>/review-settings/checklist/customise/", review_settings.checklist_customise,
         name="checklist-customise"),
    path("checklist-items/<int:pk>/", review_settings.checklist_item_update, name="checklist-item-update"),
    path("checklist-items/<int:pk>/retire/", review_settings.checklist_item_retire, name="checklist-item-retire"),
    # Anchored comments
    path("tasks/<int:task_pk>/comments/", comments.task_comments, name="task-comments"),
    path("comments/<int:pk>/reply/", comments.comment_reply, name="comment-reply"),
    path("comments/<int:pk>/resolve/", comments.comment_resolve, name="comment-resolve"),
    path("comments/<int:pk>/reopen/", comments.comment_reopen, name="comment-reopen"),
    # Audit trail and notifications
    path("tasks/<int:task_pk>/audit/", audit.task_audit, name="task-audit"),
    path("projects/<int:project_pk>/audit/", audit.project_audit, name="project-audit"),
    path("notifications/", notifications.notification_list, name="notifications"),
    path("notifications/read/", notifications.notifications_read, name="notifications-read"),
    path("notifications/<int:pk>/open/", notifications.notification_open, name="notification-open"),
]
