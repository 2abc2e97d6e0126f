from django.urls import path

from rollouts import views

urlpatterns = [
    path("tasks/<int:task_pk>/trials/", views.task_trials, name="task-trials"),
    path("batches/<int:pk>/", views.batch_detail, name="batch-detail"),
    path("batches/<int:pk>/cancel/", views.batch_cancel, name="batch-cancel"),
    path("batches/<int:pk>/compare/", views.batch_compare, name="batch-compare"),
    path("rollouts/<int:pk>/", views.rollout_detail, name="rollout-detail"),
    path("rollouts/<int:pk>/steps/", views.rollout_steps, name="rollout-steps"),
    path("steps/<int:pk>/comments/", views.step_comment_add, name="step-comment-add"),
    path("steps/<int:pk>/criterion/", views.step_criterion, name="step-criterion"),
    path("steps/<int:pk>/exchange/", views.step_exchange_view, name="step-exchange"),
]
