from django.urls import path

from packs import views

urlpatterns = [
    path("packs/", views.pack_index, name="pack-index"),
    path("projects/<int:project_pk>/packs/", views.pack_list, name="pack-list"),
    path("projects/<int:project_pk>/packs/import/", views.pack_import, name="pack-import"),
    path("projects/<int:project_pk>/packs/imported/", views.pack_imported, name="pack-imported"),
    path("packs/<int:pk>/", views.pack_detail, name="pack-detail"),
    path("packs/<int:pk>/again/", views.pack_build_again, name="pack-build-again"),
    path("packs/<int:pk>/progress/", views.pack_progress, name="pack-progress"),
    path("packs/<int:pk>/cancel/", views.pack_cancel, name="pack-cancel"),
    path("packs/<int:pk>/download/", views.pack_download, name="pack-download"),
    path("packs/<int:pk>/download/<slug:key>/", views.pack_download_format, name="pack-download-format"),
]
