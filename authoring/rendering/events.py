"""Calendar events as iCalendar (FORMATS.md, "Calendar").

Every VEVENT gets UID, DTSTAMP, DTSTART, DTEND, CREATED and LAST-MODIFIED, in UTC unless
the event keeps a time zone. The UID is derived from (world_key, path); CREATED /
LAST-MODIFIED / DTSTAMP are taken as one week before the start (an invitation is sent
ahead), so renders are identical. An imported event keeps what it came with (metadata
uid, all_day, tzid, rrule, exdate, partstat): an all-day event is written with
DTSTART;VALUE=DATE (and a DTEND, never a DURATION), a zoned one with its TZID and a
VTIMEZONE for it, a recurring one with its RRULE and EXDATEs, attendees with PARTSTAT.
"""

import datetime as dt
import itertools
import zoneinfo

import recurring_ical_events
from icalendar import Calendar, Event, vCalAddress, vRecur, vText

from .base import RenderError, WorldItem, stable_hex
from .headers import parse_event, parse_items, parse_kept, parse_when

SENT_AHEAD = dt.timedelta(days=7)
TIMEZONE_YEARS_AFTER = 10  # a VTIMEZONE covers the events' years and this many more (recurrences)
FREQUENCIES = {"DAILY": "daily", "WEEKLY": "weekly", "MONTHLY": "monthly", "YEARLY": "yearly", "HOURLY": "hourly"}


def event_uid(world_key: str, path: str) -> str:
    return f"{stable_hex('event', world_key, path)}@taskwright.local"


def item_uid(metadata: dict, *, world_key: str, path: str) -> str:
    return parse_kept("event", metadata)["uid"] or event_uid(world_key, path)


def _calendar() -> Calendar:
    cal = Calendar()
    cal.add("prodid", "-//Taskwright//World calendar//EN")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    return cal


def build_vevent(structured: dict, kept: dict, uid: str) -> Event:
    start = parse_when(structured["start"], "start")
    end = parse_when(structured["end"], "end")
    stamp = start.astimezone(dt.UTC) - SENT_AHEAD
    zone = zoneinfo.ZoneInfo(kept["tzid"]) if kept["tzid"] else dt.UTC

    def moment(when: dt.datetime) -> dt.datetime | dt.date:
        return when.date() if kept["all_day"] else when.astimezone(zone)

    first, last = moment(start), moment(end)
    if kept["all_day"] and last <= first:
        last = first + dt.timedelta(days=1)  # an all-day DTEND is exclusive and after DTSTART
    event = Event()
    event.add("uid", uid)
    event.add("dtstamp", stamp)
    event.add("created", stamp)
    event.add("last-modified", stamp)
    event.add("dtstart", first)
    event.add("dtend", last)
    if kept["rrule"]:
        event.add("rrule", vRecur.from_ical(kept["rrule"]))
    if kept["exdate"]:
        event.add("exdate", [moment(when) for when in kept["exdate"]])
    event.add("summary", structured["subject"])
    if structured["location"]:
        event.add("location", structured["location"])
    if structured["description"].strip():
        event.add("description", structured["description"].strip())
    for person in structured["attendees"]:
        attendee = vCalAddress(f"mailto:{person['email']}")
        attendee.params["cn"] = vText(person["name"] or person["email"])
        attendee.params["role"] = vText("REQ-PARTICIPANT")
        if person["email"].lower() in kept["partstat"]:
            attendee.params["partstat"] = vText(kept["partstat"][person["email"].lower()])
        event.add("attendee", attendee, encode=0)
    return event


def _event(content: str, metadata: dict, uid: str) -> tuple[Event, dict]:
    structured, kept = parse_event(content, metadata), parse_kept("event", metadata)
    return build_vevent(structured, kept, uid), kept


def _with_timezones(cal: Calendar, years: list[int]) -> Calendar:
    """A VTIMEZONE for every TZID used (RFC 5545 wants one), over the events' years."""
    if years:
        cal.add_missing_timezones(first_date=dt.date(min(years), 1, 1), last_date=dt.date(max(years) + TIMEZONE_YEARS_AFTER, 1, 1))
    return cal


def render_event(content: str, metadata: dict, *, path: str, world_key: str = "") -> bytes:
    cal = _calendar()
    event, kept = _event(content, metadata, item_uid(metadata, world_key=world_key, path=path))
    cal.add_component(event)
    return _with_timezones(cal, [event.decoded("dtstart").year] if kept["tzid"] else []).to_ical()


def event_uids(events: list[WorldItem], *, world_key: str = "") -> dict[str, str]:
    """path → UID of each event, refusing two events with one UID."""
    uids: dict[str, str] = {}
    owner: dict[str, str] = {}
    for item in events:
        try:
            uid = item_uid(item.metadata, world_key=world_key, path=item.path)
        except RenderError as exc:
            raise RenderError(f"{item.path}: {exc.message}") from None
        if owner.setdefault(uid, item.path) != item.path:
            raise RenderError(f"{item.path}: has the UID {uid} of {owner[uid]}; a UID names one event.")
        uids[item.path] = uid
    return uids


def render_ics(events: list[WorldItem], *, world_key: str = "") -> bytes:
    """All the world's events in one calendar, in order of start."""
    by_path = parse_items(events, parse_event, "event")
    uids = event_uids(events, world_key=world_key)
    cal = _calendar()
    zoned_years = []
    for path in sorted(by_path, key=lambda p: (by_path[p][2].astimezone(dt.UTC), p)):
        item, structured, when = by_path[path]
        kept = parse_kept("event", item.metadata)
        cal.add_component(build_vevent(structured, kept, uids[path]))
        if kept["tzid"]:
            zoned_years.append(when.year)
    return _with_timezones(cal, zoned_years).to_ical()


def repeats_in_words(rrule: str) -> str:
    """A recurrence rule in words where it is a common one ("weekly, 3 times"); else as written."""
    parts = dict(part.partition("=")[::2] for part in rrule.upper().split(";") if "=" in part)
    how = FREQUENCIES.get(parts.get("FREQ", ""))
    if how is None or set(parts) - {"FREQ", "COUNT", "UNTIL", "INTERVAL"}:
        return rrule
    if parts.get("INTERVAL", "1") != "1":
        how = f"every {parts['INTERVAL']} {how.removesuffix('ly').replace('dai', 'day')}s"
    if parts.get("COUNT"):
        how += f", {parts['COUNT']} times"
    if parts.get("UNTIL"):
        how += f", until {parts['UNTIL'][:8]}"
    return how


def _aware(when: dt.datetime | dt.date) -> dt.datetime:
    """An occurrence's DTSTART / DTEND as an aware datetime (an all-day one's day: its midnight, UTC)."""
    if not isinstance(when, dt.datetime):
        return dt.datetime.combine(when, dt.time(), dt.UTC)
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def occurrences(content: str, metadata: dict, *, since: dt.datetime | None, until: dt.datetime | None,
                limit: int) -> list[tuple[dt.datetime, dt.datetime]] | None:
    """(start, end) of each occurrence of a repeating event that overlaps since..until
    (either open), in order, at most `limit`: its RRULE expanded in its own time zone
    (TZID, so a weekly 09:00 stays 09:00 across a change to summer time), less its EXDATEs,
    as recurring_ical_events reads the VEVENT the world's calendar.ics holds. None for a
    one-off event or one whose fields cannot be read (world content is read leniently)."""
    if not str(metadata.get("rrule") or "").strip():
        return None
    try:
        cal = _calendar()
        cal.add_component(_event(content, metadata, "occurrences@taskwright.local")[0])
        query = recurring_ical_events.of(cal)
        found = query.between(since or dt.datetime(1, 1, 2, tzinfo=dt.UTC), until) if until else query.after(since)
        spans = ((_aware(o["DTSTART"].dt), _aware(o["DTEND"].dt)) for o in found)
        return list(itertools.islice(((s, e) for s, e in spans
                                      if (since is None or (e > since if e > s else s >= since)) and (until is None or s <= until)),
                                     limit))
    except (RenderError, ValueError, TypeError, KeyError, OverflowError, recurring_ical_events.InvalidCalendar):
        return None
