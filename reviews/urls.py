from django.urls import path

from reviews import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("tasks/<int:task_pk>/reviews/", views.task_reviews, name="task-reviews"),
    path("tasks/<int:task_pk>/submit/", views.task_submit, name="task-submit"),
    path("reviews/", views.review_queue, name="review-queue"),
    path("reviews/claim-next/", views.claim_next, name="review-claim-next"),
    path("submissions/<int:pk>/", views.submission_review, name="submission-review"),
    path("submissions/<int:pk>/decide/", views.submission_decide, name="submission-decide"),
    path("submissions/<int:pk>/release/", views.submission_release, name="submission-release"),
]
