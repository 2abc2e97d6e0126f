"""A calendar file (.ics) → one calendar event per VEVENT, in the metadata conventions of
docs/content-format.md, read with the world import's own reader (archipelago.apps
event_metadata), so an uploaded event keeps what an imported one keeps: its UID, all-day
dates, time zone, recurrence rule and exceptions, attendees with their answers.

What an event holds and a Taskwright event cannot is listed (`Left`), never dropped in
silence: an event without a start, a changed occurrence of a repeating event, reminders,
extra dates, an organizer, text longer than calendars take. Pure over bytes.
"""

import datetime as dt
import re
from dataclasses import dataclass, field

from authoring.extraction.common import Left, clean_text, refuse
from authoring.extraction.detect import decode_text
from authoring.rendering import RenderError
from authoring.rendering.headers import DESCRIPTION_MAX, EMAIL, LOCATION_MAX, SUMMARY_MAX, parse_event, parse_kept

MAX_EVENTS = 2_000
UNTITLED = "Untitled event"
_OTHER_COMPONENTS = {"VTODO": "to-do item", "VJOURNAL": "journal entry", "VFREEBUSY": "free/busy block"}


@dataclass
class EventPiece:
    """One event of the file, ready to become a calendar-event document."""

    uid: str
    subject: str
    start: dt.datetime
    content: str
    metadata: dict
    original: bytes  # this event alone (with the file's time zones) as an .ics
    notes: list[str] = field(default_factory=list)  # what changed on the way in (for the version note)


def label(subject: str, start: dt.date | None) -> str:
    when = f" on {start:%d %b %Y}" if isinstance(start, dt.date) else ""
    return f"The event “{subject or UNTITLED}”{when}"


def read_calendar(data: bytes, *, known: dict[str, str] | None = None) -> tuple[list[EventPiece], list[Left]]:
    """The events of an iCalendar file and what of it was not kept. `known`: the UIDs of
    events already in the data room → their paths (such an event is not kept twice).
    Raises ApplicationError when the file is not a readable calendar."""
    from icalendar import Calendar

    text, _ = decode_text(data)
    try:
        calendar = Calendar.from_ical(text)
    except Exception as exc:  # icalendar raises ValueError and friends on malformed text
        raise refuse(f"This calendar file could not be read ({type(exc).__name__}: {str(exc)[:160]}).") from None
    events = calendar.walk("VEVENT")
    if len(events) > MAX_EVENTS:
        raise refuse(f"This calendar holds {len(events):,} events; upload at most {MAX_EVENTS:,} at a time (split it by year).")
    timezones = calendar.walk("VTIMEZONE")
    pieces: list[EventPiece] = []
    left: list[Left] = []
    seen = {uid: f"it is already in the data room as {path}." for uid, path in (known or {}).items()}  # UID → why not again
    for event in events:
        uid = " ".join(str(event.get("uid") or "").split())
        if uid in seen and event.get("recurrence-id") is None:
            start = getattr(event.get("dtstart"), "dt", None)
            left.append(Left(label(" ".join(str(event.get("summary") or "").split()), start), seen[uid]))
            continue
        original = _alone(calendar, timezones, event)  # before anything is taken out of it
        piece = _event(event, left)
        if piece is None:
            continue
        if piece.uid:
            seen[piece.uid] = f"it has the same UID as the event “{piece.subject}” of this file, which is kept."
        piece.original = original
        pieces.append(piece)
    for name, noun in _OTHER_COMPONENTS.items():
        count = len(calendar.walk(name))
        if count:
            left.append(Left(f"{count} {noun}{'s' if count != 1 else ''}", "a Taskwright calendar holds events only."))
    return pieces, left


def _event(event, left: list[Left]) -> EventPiece | None:
    from authoring.archipelago.apps import event_metadata

    subject = " ".join(str(event.get("summary") or "").split())
    start_value = getattr(event.get("dtstart"), "dt", None)
    name = label(subject, start_value)
    if event.get("recurrence-id") is not None:
        left.append(Left(name, "it changes one occurrence of a repeating event; the repeating event is kept, "
                               "this change to one of its dates is not."))
        return None
    if start_value is None:
        left.append(Left(name, "it has no start date, and a calendar event needs one."))
        return None
    notes: list[str] = []
    lost: list[tuple[str, str]] = []  # (what of it, why)
    no_place = "a Taskwright event has no place for it; the event itself is kept."
    _keep_valid_attendees(event, lost)
    try:
        metadata, start = event_metadata(event)
    except Exception as exc:  # a value icalendar parsed but cannot give (a bad RRULE, an odd EXDATE)
        left.append(Left(name, f"its dates or repeat rule cannot be read ({type(exc).__name__})."))
        return None
    if start is None:
        left.append(Left(name, "its start cannot be read as a date."))
        return None
    name = label(subject, start)
    if isinstance(start_value, dt.datetime) and start_value.tzinfo is None:
        notes.append("Its times had no time zone; they were read as UTC.")
    rrules = event.get("rrule")
    if isinstance(rrules, list) and len(rrules) > 1:
        lost.append((f"its {len(rrules) - 1} further repeat rule{'s' if len(rrules) > 2 else ''}",
                     "an event repeats by one rule; the first is kept."))
    if event.get("rdate") is not None:
        lost.append(("its extra dates (RDATE)", no_place))
    alarms = len(event.walk("VALARM"))
    if alarms:
        lost.append((f"its reminder{'s' if alarms != 1 else ''}", no_place))
    if event.get("organizer") is not None:
        lost.append((f"its organizer, {_address(event.get('organizer'))}", no_place))
    if event.get("attach") is not None:
        lost.append(("its attached links or files", no_place))
    content = clean_text(str(event.get("description") or "")).strip("\n")
    subject = subject or UNTITLED
    if not metadata.get("subject"):
        notes.append(f"It had no title; it is called “{UNTITLED}”.")
    metadata["subject"] = subject
    for key, limit, what in (("subject", SUMMARY_MAX, "title"), ("location", LOCATION_MAX, "location")):
        if len(metadata.get(key, "")) > limit:
            metadata[key] = metadata[key][: limit - 1].rstrip() + "…"
            lost.append((f"the end of its {what}", f"calendars take at most {limit:,} characters; the rest is kept."))
    if len(content) > DESCRIPTION_MAX:
        content = content[: DESCRIPTION_MAX - 1].rstrip() + "…"
        lost.append(("the end of its description", f"calendars take at most {DESCRIPTION_MAX:,} characters; the rest is kept."))
    uid = " ".join(str(event.get("uid") or "").split())
    metadata = {key: value for key, value in metadata.items() if value}
    if uid and len(uid) <= 255:
        metadata["uid"] = uid
    elif uid:
        notes.append("Its UID was longer than 255 characters; a new one is made on export.")
        uid = ""
    try:
        parse_event(content, metadata)
        parse_kept("event", metadata)
    except RenderError as exc:
        left.append(Left(name, f"it cannot be kept as a calendar event: {exc.message}"))
        return None
    for what, why in lost:
        left.append(Left(f"{name}: {what}", why))
    return EventPiece(uid=uid, subject=metadata["subject"], start=start, content=content, metadata=metadata, original=b"", notes=notes)


def _address(prop) -> str:
    email = re.sub(r"^mailto:", "", str(prop), flags=re.IGNORECASE).strip()
    name = str(getattr(prop, "params", {}).get("CN") or "")
    return f"{name} <{email}>" if name and name != email else email


def _keep_valid_attendees(event, lost: list[tuple[str, str]]) -> None:
    """Attendees without a usable email address are taken out (and listed as lost):
    the calendar format names each attendee by address."""
    attendees = event.get("attendee")
    attendees = attendees if isinstance(attendees, list) else [attendees] if attendees is not None else []
    good = [a for a in attendees if EMAIL.match(re.sub(r"^mailto:", "", str(a), flags=re.IGNORECASE).strip())]
    if len(good) == len(attendees):
        return
    for attendee in attendees:
        if attendee not in good:
            lost.append((f"the attendee {_address(attendee) or '(no address)'}",
                         "the address is not an email address; the event is kept without this attendee."))
    del event["attendee"]
    for attendee in good:
        event.add("attendee", attendee, encode=False)


def _alone(calendar, timezones: list, event) -> bytes:
    """The event as a calendar of its own, with the file's time zones: its original."""
    from icalendar import Calendar

    alone = Calendar()
    for key in ("prodid", "version", "calscale"):
        if calendar.get(key) is not None:
            alone.add(key, calendar.get(key))
    for timezone in timezones:
        alone.add_component(timezone)
    alone.add_component(event)
    return alone.to_ical()
