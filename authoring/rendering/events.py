"""Calendar events as iCalendar (FORMATS.md, "Calendar").

Every VEVENT gets UID, DTSTAMP, DTSTART, DTEND, CREATED and LAST-MODIFIED, all in UTC.
The UID is derived from (world_key, path); CREATED / LAST-MODIFIED / DTSTAMP are taken
as one week before the start (an invitation is sent ahead), so renders are identical.
"""

import datetime as dt

from icalendar import Calendar, Event, vCalAddress, vText

from .base import WorldItem, stable_hex
from .headers import parse_event, parse_items, parse_when

SENT_AHEAD = dt.timedelta(days=7)


def event_uid(world_key: str, path: str) -> str:
    return f"{stable_hex('event', world_key, path)}@taskwright.local"


def _calendar() -> Calendar:
    cal = Calendar()
    cal.add("prodid", "-//Taskwright//World calendar//EN")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    return cal


def _vevent(structured: dict, uid: str) -> Event:
    start = parse_when(structured["start"], "start").astimezone(dt.UTC)
    end = parse_when(structured["end"], "end").astimezone(dt.UTC)
    stamp = start - SENT_AHEAD
    event = Event()
    event.add("uid", uid)
    event.add("dtstamp", stamp)
    event.add("created", stamp)
    event.add("last-modified", stamp)
    event.add("dtstart", start)
    event.add("dtend", end)
    event.add("summary", structured["subject"])
    if structured["location"]:
        event.add("location", structured["location"])
    if structured["description"].strip():
        event.add("description", structured["description"].strip())
    for person in structured["attendees"]:
        attendee = vCalAddress(f"mailto:{person['email']}")
        attendee.params["cn"] = vText(person["name"] or person["email"])
        attendee.params["role"] = vText("REQ-PARTICIPANT")
        event.add("attendee", attendee, encode=0)
    return event


def render_event(content: str, metadata: dict, *, path: str, world_key: str = "") -> bytes:
    cal = _calendar()
    cal.add_component(_vevent(parse_event(content, metadata), event_uid(world_key, path)))
    return cal.to_ical()


def render_ics(events: list[WorldItem], *, world_key: str = "") -> bytes:
    """All the world's events in one calendar, in order of start."""
    by_path = parse_items(events, parse_event, "event")
    cal = _calendar()
    for path in sorted(by_path, key=lambda p: (by_path[p][2].astimezone(dt.UTC), p)):
        cal.add_component(_vevent(by_path[path][1], event_uid(world_key, path)))
    return cal.to_ical()
