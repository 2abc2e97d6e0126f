"""Calendar: list and search events by date range and attendee; read, create, update.
An event's id is its data-room path."""

import datetime as dt
import re

from authoring.models import DocumentKind

from .base import ADDRESSES_ARG, LIMIT_ARG, OFFSET_ARG, ToolError, clip, fit, require_writable, snippet, text_arg, to_json, tool
from .common import DATE_HELP, Bound, check_when, date_bound, save, save_new
from .files import not_found
from .paths import check_path
from .world import MAX_OCCURRENCES, Event, Workspace, overlaps

MAX_DESCRIPTION = 8_000
STORED_FIELD = re.compile(r"metadata '(\w+)'")
ID_ARG = text_arg("The event's id, as list_events or search_events shows it.", min_length=1)
WHEN_ARG = "ISO 8601 date and time with its UTC offset, e.g. 2026-03-04T15:00:00+00:00."
FIELDS = {
    "subject": text_arg("The event's title.", min_length=1),
    "start": text_arg(f"When it starts: {WHEN_ARG}", min_length=10, max_length=40),
    "end": text_arg(f"When it ends: {WHEN_ARG}", min_length=10, max_length=40),
    "attendees": ADDRESSES_ARG,
    "location": text_arg("Where, e.g. a room or 'Video call'."),
    "description": text_arg("The agenda or description (Markdown).", max_length=MAX_DESCRIPTION),
    "all_day": {"type": "boolean", "description": "An all-day event: start and end are read as days (the end day included), "
                "e.g. start 2026-03-04 and end 2026-03-05 for two whole days.", "default": False},
}


def get_event(ws: Workspace, id: object) -> Event:
    id = check_path(id, what="id")
    event = ws.event(id)
    if event is None:
        raise not_found(ws, id, DocumentKind.EVENT, "No event with id", "Use list_events or search_events to find events.")
    return event


def _days_shown(e: Event) -> tuple[str, str]:
    """An all-day event's first and last day as dates, the last one included (stored, its end
    is the midnight after it, as iCalendar has it: shown so, a 10-11 March offsite read as
    running into the 12th)."""
    last = e.end - dt.timedelta(days=1) if e.end is not None and e.end > e.start else e.start
    return e.start.date().isoformat(), last.date().isoformat()


def summary(e: Event, *, full: bool = False) -> dict:
    found = {"id": e.id, "subject": e.subject, "start": e.start_text, "end": e.end_text, "location": e.location,
             "attendees": e.attendees, "description": clip(e.description, 10_000) if full else snippet(e.description, width=200)}
    if e.all_day:
        found["all_day"] = True  # start and end are days, the end day included
        if e.start is not None:
            found["start"], found["end"] = _days_shown(e)
    if e.rrule:
        found["repeats"] = e.repeats
        if e.series_start:  # one occurrence: read_event and update_event take the whole series by its id
            found["series_start"] = e.series_start
    return found


def _in_range(e: Event, since: Bound | None, until: Bound | None) -> bool:
    """Does the event (one occurrence) fall in the range? A bare date is a day on the event's
    own clock: an event at 17:00-08:00 on 5 March is on the 5th (the 6th in UTC)."""
    if e.start is None:
        return since is None and until is None
    if since is not None:
        if since.day is not None:
            last = (e.end - dt.timedelta(microseconds=1)).astimezone(e.start.tzinfo) if e.end and e.end > e.start else e.start
            if last.date() < since.day:
                return False
        elif not overlaps(e.start, e.end, since.moment, None):
            return False
    return until is None or until.admits(e.start)


def _page(events: list[Event], limit: int, offset: int, note: str = "") -> str:
    page = events[offset : offset + limit]
    result = {"total": len(events), "offset": offset, "events": [summary(e) for e in page]}
    if note:
        result["note"] = note
    shown = len(page) - fit(result, "events")
    if offset + shown < len(events):
        result["next_offset"] = offset + shown
    return to_json(result)


@tool(
    "list_events",
    "List calendar events by start time, optionally only those overlapping a date range and/or with a given attendee. "
    "A repeating event is listed once, with how it repeats; given a start or end, each of its occurrences in the range is "
    "listed instead, with the series' own start. Descriptions are shortened; read_event shows one in full.",
    {
        "start": text_arg(f"Only events ending on or after this. {DATE_HELP}", max_length=40),
        "end": text_arg(f"Only events starting on or before this (a bare date includes that day). {DATE_HELP}", max_length=40),
        "attendee": text_arg("Part of an attendee's name or address."),
        "limit": LIMIT_ARG,
        "offset": OFFSET_ARG,
    },
)
def list_events(ws: Workspace, start: str = "", end: str = "", attendee: str = "", limit: int = 20, offset: int = 0) -> str:
    since = date_bound(start, "start", end=False) if start.strip() else None
    until = date_bound(end, "end", end=True) if end.strip() else None
    who = attendee.strip().lower()
    if since or until:
        found, cut = ws.events_between(since and since.lookup, until and until.lookup, keep=lambda e: _in_range(e, since, until))
    else:
        found, cut = ws.events(), False
    found = [e for e in found if not who or any(who in a.lower() for a in e.attendees)]
    note = (f"A repeating event is listed with its first {MAX_OCCURRENCES} occurrences in the range; give a later 'start' "
            "to see the ones after.") if cut else ""
    return _page(found, limit, offset, note)


@tool(
    "search_events",
    "Search calendar events by words in their title, location, description or attendees (case-insensitive; every word must appear).",
    {"query": text_arg("Words to look for.", min_length=1, max_length=200), "limit": LIMIT_ARG, "offset": OFFSET_ARG},
    required=("query",),
)
def search_events(ws: Workspace, query: str, limit: int = 20, offset: int = 0) -> str:
    words = query.lower().split()
    if not words:
        raise ToolError("The query is blank; give one or more words to look for.")
    found = [e for e in ws.events()
             if all(w in f"{e.subject}\n{e.location}\n{e.description}\n{', '.join(e.attendees)}".lower() for w in words)]
    return _page(found, limit, offset)


@tool("read_event", "Read one calendar event in full.", {"id": ID_ARG}, required=("id",))
def read_event(ws: Workspace, id: str) -> str:
    return to_json(summary(get_event(ws, id), full=True))


def is_all_day(metadata: dict) -> bool:
    return str(metadata.get("all_day") or "").strip().lower() == "true"


def _whole_days(metadata: dict, fields: dict, base: dict) -> None:
    """An all-day event is stored as imported ones are: midnight UTC of its first day to
    midnight after its last (iCalendar's DTEND is exclusive)."""
    first = check_when(metadata.get("start", ""), "start").date()
    if not metadata.get("end"):
        last = first
    elif "end" in fields or not is_all_day(base):
        last = check_when(metadata["end"], "end").date()
    else:  # the end it already had: the midnight after its last day
        last = check_when(metadata["end"], "end").date() - dt.timedelta(days=1)
    if last < first:
        raise ToolError(f"The last day ({last}) is before the first ({first}).")
    metadata["start"] = f"{first.isoformat()}T00:00:00+00:00"
    metadata["end"] = f"{(last + dt.timedelta(days=1)).isoformat()}T00:00:00+00:00"


def _event_values(ws: Workspace, path: str | None, fields: dict, base: dict) -> tuple[str, dict]:
    """(description, metadata) of the event at `path` (None: a new one) with `fields` changed."""
    metadata = dict(base)
    for key in ("subject", "start", "end", "location"):
        if key in fields:
            metadata[key] = " ".join(fields[key].split())
    if "all_day" in fields:
        metadata["all_day"] = "true" if fields["all_day"] else ""
    if is_all_day(metadata) and ({"start", "end", "all_day"} & set(fields)):
        _whole_days(metadata, fields, base)
    if "attendees" in fields:
        metadata["attendees"] = ", ".join(a.strip() for a in fields["attendees"] if a.strip())
    content = fields.get("description", ws.get(path).content if path and ws.get(path) else "")
    return content, metadata


@tool(
    "create_event",
    "Create a calendar event (kept in your workspace).",
    {key: FIELDS[key] for key in ("subject", "start", "end", "attendees", "location", "description", "all_day")},
    required=("subject", "start", "end"),
    writes=True,
)
def create_event(ws: Workspace, **fields) -> str:
    require_writable(ws)
    start = check_when(fields["start"], "start")
    content, metadata = _event_values(ws, None, fields, {})
    path = save_new(ws, folder="Calendar", when=start, title=fields["subject"], kind=DocumentKind.EVENT, content=content,
                    metadata=metadata)
    return to_json({"created": summary(ws.event(path), full=True)})


@tool(
    "update_event",
    "Change a calendar event: give its id and only the fields to change (attendees, if given, replaces the whole list). "
    "A repeating event changes as a whole series: its start and end are those of its first occurrence.",
    {"id": ID_ARG, **FIELDS},
    required=("id",),
    writes=True,
)
def update_event(ws: Workspace, id: str, **fields) -> str:
    require_writable(ws)
    event = get_event(ws, id)
    if not fields:
        raise ToolError("Nothing to change: give at least one of subject, start, end, attendees, location, description, all_day.")
    try:
        content, metadata = _event_values(ws, event.id, fields, ws.get(event.id).metadata)
        save(ws, path=event.id, kind=DocumentKind.EVENT, content=content, metadata=metadata)
        return to_json({"updated": summary(ws.event(event.id), full=True)})
    except ToolError as exc:
        stored = STORED_FIELD.search(exc.message)
        if stored and stored.group(1) not in fields:
            raise ToolError(f"{exc.message} (This value is the event's own; pass {stored.group(1)} to replace it.)") from None
        raise
