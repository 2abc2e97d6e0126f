"""Worlds as zips in the APEX-Agents / Archipelago layout (FORMATS.md, "World on disk").

```
filesystem/<path>                                 every file document, rendered as its format
.apps_data/mail/sent.mbox                         every email
.apps_data/chat/Groups/<group_id>/messages.json   chat, one group per channel (+ group_info.json)
.apps_data/chat/Users/<user_id>/user_info.json    one per chat author
.apps_data/calendar/calendar.ics                  every event
.apps_data/taskwright/world.json                  outline, facts, documents' notes: see layout.SIDECAR
```

`write_world_zip` / `write_world_snapshot_zip` (export.py) and `read_world_zip`
(importer.py) work on plain values; authoring.services.world_transfer checks roles and
reads or writes the database. Export → import → export gives the same bytes for every
file of the zip; an imported world keeps the ids its mail, chat and events came with.
"""

from .export import ExportDocument, write_world_snapshot_zip, write_world_zip
from .importer import ImportedDocument, ImportedWorld, read_world_zip
from .layout import ARCHIVE_LIMITS, MAX_ARCHIVE_BYTES, WORLD_KEY, export_path

__all__ = [
    "ARCHIVE_LIMITS", "MAX_ARCHIVE_BYTES", "WORLD_KEY", "ExportDocument", "ImportedDocument", "ImportedWorld",
    "export_path", "read_world_zip", "write_world_snapshot_zip", "write_world_zip",
]
