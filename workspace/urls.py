from django.urls import path, register_converter

from workspace import views
from workspace.views.common import ScopeConverter

register_converter(ScopeConverter, "replica_scope")

# /worlds/<id>/apps/… shows the world; /overlays/<id>/apps/… the same screens over an
# overlay, its changes highlighted.
urlpatterns = [
    path("<replica_scope:scope>/<int:pk>/apps/drive/", views.drive, name="replica-drive"),
    path("<replica_scope:scope>/<int:pk>/apps/mail/", views.mail, name="replica-mail"),
    path("<replica_scope:scope>/<int:pk>/apps/chat/", views.chat, name="replica-chat"),
    path("<replica_scope:scope>/<int:pk>/apps/calendar/", views.calendar, name="replica-calendar"),
    path("overlays/<int:pk>/apps/drive/download/", views.overlay_file_download, name="overlay-file-download"),
    path("overlays/<int:pk>/changes/", views.overlay_changes, name="overlay-changes"),
    path("overlays/<int:pk>/delete/", views.sandbox_delete, name="sandbox-delete"),
    path("worlds/<int:pk>/sandboxes/", views.world_sandboxes, name="world-sandboxes"),
]
