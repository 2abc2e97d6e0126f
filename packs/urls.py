from django.urls import path

from packs import views

urlpatterns = [
    path("projects/<int:project_pk>/packs/", views.pack_list, name="pack-list"),
    path("packs/<int:pk>/progress/", views.pack_progress, name="pack-progress"),
    path("packs/<int:pk>/download/", views.pack_download, name="pack-download"),
]
