"""The replica UI: a world (or an overlay over it) as Drive, Mail, Chat and Calendar,
read through the same Workspace the agent's tools use."""

from workspace.views.calendar import calendar
from workspace.views.changes import overlay_changes, sandbox_delete, world_sandboxes
from workspace.views.chat import chat
from workspace.views.drive import drive, overlay_file_download
from workspace.views.mail import mail

__all__ = ["calendar", "chat", "drive", "mail", "overlay_changes", "overlay_file_download", "sandbox_delete", "world_sandboxes"]
