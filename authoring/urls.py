from django.urls import path

from authoring import views

urlpatterns = [
    path("projects/<int:pk>/", views.project_detail, name="project-detail"),
    path("projects/<int:project_pk>/worlds/new/", views.world_create, name="world-create"),
    path("worlds/<int:pk>/", views.world_editor, name="world-editor"),
    path("worlds/<int:world_pk>/documents/new/", views.document_add, name="document-add"),
    path("worlds/<int:world_pk>/tasks/new/", views.task_create, name="task-create"),
    path("documents/<int:pk>/", views.document_editor, name="document-editor"),
    path("documents/<int:pk>/row/", views.document_row, name="document-row"),
    path("documents/<int:pk>/move/", views.document_move, name="document-move"),
    path("documents/<int:pk>/delete/", views.document_delete, name="document-delete"),
    path("documents/<int:pk>/preview/", views.document_preview, name="document-preview"),
    path("tasks/<int:pk>/", views.task_editor, name="task-editor"),
    path("tasks/<int:task_pk>/criteria/new/", views.criterion_add, name="criterion-add"),
    path("criteria/<int:pk>/", views.criterion_row, name="criterion-row"),
    path("criteria/<int:pk>/move/", views.criterion_move, name="criterion-move"),
    path("criteria/<int:pk>/delete/", views.criterion_delete, name="criterion-delete"),
]
