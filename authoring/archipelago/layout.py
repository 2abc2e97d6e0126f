"""Where things sit in a world zip (FORMATS.md, "World on disk"), and the limits an
imported one must keep."""

import re
from pathlib import PurePosixPath

FILESYSTEM = "filesystem/"
APPS_DATA = ".apps_data/"
MAIL_DIR = ".apps_data/mail/"
MBOX = ".apps_data/mail/sent.mbox"
CHAT_DIR = ".apps_data/chat/"
CALENDAR_DIR = ".apps_data/calendar/"
ICS = ".apps_data/calendar/calendar.ics"
# Taskwright's own notes on the export (world.json): under .apps_data/ but in no app's
# folder, so no Archipelago app reads it and the agents' drive (filesystem/) never shows
# it. A world's own content travels with it: the scenario outline and the facts sheet,
# and for every document its kind, brief, metadata, target size and status (a locked
# document comes back locked); for a file also its source text (so an import restores it
# exactly, where reading a PDF back cannot), for mail, chat and events their paths, keyed
# by the id the app file gives them. Version 2:
#   {"taskwright_world": 2, "title", "outline", "facts": [{key, value}],
#    "files": {<path under filesystem/>: {kind, format, sha256, content, metadata, brief, target_size, status}},
#    "mail" | "chat" | "calendar": {<Message-ID | message_id | UID>: {kind, path, metadata, brief, target_size, status}}}
# Version 1 (still read) had no outline, facts or notes: files' metadata held only
# "author", and "mail" / "chat" / "calendar" mapped an id to a path.
SIDECAR = ".apps_data/taskwright/world.json"
SIDECAR_VERSION = 2
SIDECAR_VERSIONS_READ = (1, 2)

# Message-IDs, chat ids and event UIDs are derived from (WORLD_KEY, document path). A
# constant key is what survives import: paths are kept (world.json names them), so the
# same world exports to the same ids wherever it lives. Worlds are run one per sandbox,
# so two worlds sharing ids never meet. An imported world's own ids, where they differ,
# are kept in its documents' metadata and written instead (archipelago/kept.py).
WORLD_KEY = ""

ZIP_DATE = (1980, 1, 1, 0, 0, 0)

MIB = 1024 * 1024
# check_zip limits for an imported world (before anything is read).
ARCHIVE_LIMITS = {"max_entries": 10_000, "max_total_bytes": 1024 * MIB, "max_entry_bytes": 256 * MIB, "max_ratio": 100}
MAX_ARCHIVE_BYTES = 300 * MIB  # the zip itself, as uploaded
MAX_FILE_BYTES = 50 * MIB  # one data-room file
MAX_APP_FILE_BYTES = 128 * MIB  # the mbox, one calendar, one chat group
MAX_SIDECAR_BYTES = 256 * MIB

# A file document's path keeps its own extension when the format is text (md) and the
# extension is not another format's: an imported notes.txt or readme.eml stays so named.
OTHER_FORMAT_SUFFIXES = {".docx", ".xlsx", ".pptx", ".pdf", ".csv"}
EXTENSION = re.compile(r"^\.[A-Za-z0-9]{1,8}$")


def export_path(path: str, format: str) -> str:
    """A file document's place under filesystem/: its data-room path, with the format's
    extension added when the path lacks it (as the document download names it)."""
    suffix = PurePosixPath(path).suffix
    if suffix.lower() == f".{format}":
        return path
    if format == "md" and EXTENSION.match(suffix) and suffix.lower() not in OTHER_FORMAT_SUFFIXES:
        return path
    return f"{path}.{format}"
