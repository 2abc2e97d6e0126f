"""The replica UI: a world (or an overlay over it) as Drive, Mail, Chat and Calendar,
read through the same Workspace the agent's tools use; in a sandbox, written to as well."""

from workspace.views.calendar import calendar
from workspace.views.changes import overlay_changes, overlay_entry_discard, sandbox_delete, world_sandboxes
from workspace.views.chat import chat
from workspace.views.drive import drive, overlay_file_download
from workspace.views.mail import mail
from workspace.views.sandbox import (
    sandbox_chat_post,
    sandbox_chat_reply,
    sandbox_event_create,
    sandbox_event_delete,
    sandbox_event_update,
    sandbox_file_delete,
    sandbox_file_edit,
    sandbox_file_upload,
    sandbox_mail_reply,
    sandbox_mail_send,
)

__all__ = [
    "calendar", "chat", "drive", "mail", "overlay_changes", "overlay_entry_discard", "overlay_file_download", "sandbox_chat_post",
    "sandbox_chat_reply", "sandbox_delete", "sandbox_event_create", "sandbox_event_delete", "sandbox_event_update",
    "sandbox_file_delete", "sandbox_file_edit", "sandbox_file_upload", "sandbox_mail_reply", "sandbox_mail_send", "world_sandboxes",
]
