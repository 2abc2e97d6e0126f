"""What mail, chat and calendar share: date arguments, the clock, server-chosen paths,
the actor as sender, and validation with the same parser the exports use."""

import datetime as dt
from dataclasses import dataclass

from django.utils import timezone
from django.utils.text import slugify

from authoring.rendering import parse_content
from authoring.rendering.base import RenderError
from authoring.rendering.headers import format_address
from workspace.services import PathTaken, overlay_entry_upsert

from .base import ToolError, require_writable
from .world import Workspace, parse_date

STEP = dt.timedelta(minutes=1)
DATE_HELP = "An ISO 8601 date (2026-03-01) or date and time with offset (2026-03-01T09:00:00+00:00)."


WIDEST_OFFSET = dt.timedelta(hours=14)  # UTC+14 / UTC-12: a calendar day spans at most this much more than 24 hours


@dataclass(frozen=True)
class Bound:
    """A date-range argument: a moment, or a bare date, which is a day as each item's own
    clock reads it (an email sent at 23:30-08:00 on 3 March is on the 3rd, though it is the
    4th in UTC)."""

    moment: dt.datetime  # a bare date: its first moment in UTC (its last, as an end)
    day: dt.date | None = None
    end: bool = False

    @property
    def lookup(self) -> dt.datetime:
        """A moment safe to pre-select by: widened by the widest UTC offset for a day."""
        if self.day is None:
            return self.moment
        return self.moment + WIDEST_OFFSET if self.end else self.moment - WIDEST_OFFSET

    def admits(self, when: dt.datetime | None) -> bool:
        """Is `when` (aware, in the offset it was written with) on the right side of this bound?"""
        if when is None:
            return False
        if self.day is not None:
            return when.date() <= self.day if self.end else when.date() >= self.day
        return when <= self.moment if self.end else when >= self.moment


def date_bound(value: str, field: str, *, end: bool) -> Bound:
    """A date-range argument; a bare date is a whole day (an end includes it)."""
    when = parse_date(value)
    if when is None:
        raise ToolError(f"{field} {value!r} is not a date. {DATE_HELP}")
    if len(value.strip()) == 10:
        day = when.date()
        return Bound(when + dt.timedelta(days=1) - dt.timedelta(microseconds=1) if end else when, day=day, end=end)
    return Bound(when, end=end)


def stamp(after: dt.datetime | None = None) -> dt.datetime:
    """Now, to the second, in UTC. A reply is never dated before what it answers: a world
    set in the future would otherwise get replies older than their thread."""
    now = timezone.now().astimezone(dt.UTC).replace(microsecond=0)
    if after is not None and now <= after:
        return (after + STEP).astimezone(dt.UTC).replace(microsecond=0)
    return now


def iso(when: dt.datetime) -> str:
    return when.isoformat()


def check_when(value: str, field: str) -> dt.datetime:
    when = parse_date(value)
    if when is None:
        raise ToolError(f"{field} {value!r} is not a date and time; write ISO 8601, e.g. 2026-03-04T15:00:00+00:00.")
    return when


def actor(ws: Workspace) -> str:
    overlay = require_writable(ws)
    return format_address({"name": overlay.actor_name, "email": overlay.actor_email})


def new_path(ws: Workspace, folder: str, when: dt.datetime, title: str, *, taken: set[str] = frozenset()) -> str:
    """A fresh path such as 'Mail/Sent/2026-01-05T09-00-00Z quarterly-update', never one
    the world or the overlay holds (a path the overlay deleted included), nor one of `taken`."""
    base = f"{folder}/{when.astimezone(dt.UTC):%Y-%m-%dT%H-%M-%SZ} {slugify(title)[:80] or 'untitled'}"
    path, n = base, 2
    while path in taken or ws.get(path) is not None or ws.world_item(path) is not None:
        path, n = f"{base} {n}", n + 1
    return path


def save(ws: Workspace, *, path: str, kind: str, content: str, metadata: dict, create_only: bool = False) -> None:
    """Validate as the exporters will read it, then write to the overlay only."""
    overlay = require_writable(ws)
    metadata = {k: v for k, v in metadata.items() if v not in ("", None, [])}
    try:
        parse_content(kind, "", content, metadata)
    except RenderError as exc:
        raise ToolError(exc.message) from None
    ws.record(overlay_entry_upsert(overlay=overlay, path=path, kind=kind, format="", content=content, metadata=metadata,
                                   create_only=create_only))


NEW_PATH_TRIES = 20


def save_new(ws: Workspace, *, folder: str, when: dt.datetime, title: str, kind: str, content: str, metadata: dict) -> str:
    """Save a new item at a fresh path (new_path) and return the path. Two calls on one
    overlay at once (an MCP client's parallel tool calls) may pick the same path from what
    each had read: the second then takes the next free one, and neither replaces the other."""
    taken: set[str] = set()
    for _ in range(NEW_PATH_TRIES):
        path = new_path(ws, folder, when, title, taken=taken)
        try:
            save(ws, path=path, kind=kind, content=content, metadata=metadata, create_only=True)
            return path
        except PathTaken:
            taken.add(path)
    raise ToolError("Too many items are being made at this moment at the same path; nothing was saved. Try again.")
