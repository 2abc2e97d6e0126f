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
    path("overlays/<int:pk>/changes/discard/", views.overlay_entry_discard, name="overlay-entry-discard"),
    # A sandbox's apps answering the author (POST only; a trial run's workspace refuses).
    path("overlays/<int:pk>/apps/mail/send/", views.sandbox_mail_send, name="sandbox-mail-send"),
    path("overlays/<int:pk>/apps/mail/reply/", views.sandbox_mail_reply, name="sandbox-mail-reply"),
    path("overlays/<int:pk>/apps/chat/post/", views.sandbox_chat_post, name="sandbox-chat-post"),
    path("overlays/<int:pk>/apps/chat/reply/", views.sandbox_chat_reply, name="sandbox-chat-reply"),
    path("overlays/<int:pk>/apps/calendar/add/", views.sandbox_event_create, name="sandbox-event-create"),
    path("overlays/<int:pk>/apps/calendar/edit/", views.sandbox_event_update, name="sandbox-event-update"),
    path("overlays/<int:pk>/apps/calendar/delete/", views.sandbox_event_delete, name="sandbox-event-delete"),
    path("overlays/<int:pk>/apps/drive/upload/", views.sandbox_file_upload, name="sandbox-file-upload"),
    path("overlays/<int:pk>/apps/drive/edit/", views.sandbox_file_edit, name="sandbox-file-edit"),
    path("overlays/<int:pk>/apps/drive/delete/", views.sandbox_file_delete, name="sandbox-file-delete"),
    path("overlays/<int:pk>/delete/", views.sandbox_delete, name="sandbox-delete"),
    path("worlds/<int:pk>/sandboxes/", views.world_sandboxes, name="world-sandboxes"),
]
