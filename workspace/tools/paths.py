"""Data-room paths as tools accept them. A path is relative to the data room's root (a
leading "/" names that root), with forward slashes and no '.', '..' or empty segments:
anything else is refused before any lookup, so no argument can name something outside the
workspace (there is no filesystem behind it anyway)."""

from .base import ToolError

MAX_PATH = 500


def check_path(value: object, *, what: str = "path", allow_root: bool = False) -> str:
    if not isinstance(value, str):
        raise ToolError(f"{what} must be a text path such as Deal/Letter of intent.docx.")
    path = value.strip()
    if allow_root and path.strip("/") == "":
        return ""
    # The data room's root is "/" where the field's files name it so (Archipelago's
    # X-Attachments, an agent used to them): a leading or trailing "/" is dropped.
    if path.startswith("/") and path.strip("/"):
        path = path.lstrip("/")
    if path.endswith("/") and path.strip("/"):
        path = path.rstrip("/")
    if not path:
        raise ToolError(f"{what} is empty; give a data-room path such as Deal/Letter of intent.docx.")
    if len(path) > MAX_PATH:
        raise ToolError(f"{what} is too long ({len(path)} characters; at most {MAX_PATH}).")
    if "\x00" in path or any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        raise ToolError(f"{what} contains control characters; use a plain data-room path such as Deal/Notes.md.")
    if "\\" in path:
        raise ToolError(f"{what} {path!r} contains a backslash; data-room paths use forward slashes, e.g. Deal/Notes.md.")
    if path.startswith("/") or path.startswith("~") or (len(path) > 1 and path[1] == ":"):
        raise ToolError(f"{what} {path!r} is absolute; data-room paths are relative, e.g. Deal/Notes.md (no leading '/').")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise ToolError(f"{what} {path!r} is not a valid data-room path: no '..', '.' or empty folder names. "
                        "Use list_files to see the folders.")
    return path
