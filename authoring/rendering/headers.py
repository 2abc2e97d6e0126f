"""Emails, chat messages and events: their metadata (docs/content-format.md) ↔ the
structured form a model drafts, with the checks their readers need.

Structured forms (every key always present):
  email {"from": {"name", "email"}, "to": [addr], "cc": [addr], "bcc": [addr], "date",
         "subject", "attachments": [path], "body"}
  chat  {"channel", "from": {"name", "email"}, "date", "text"}
  event {"subject", "start", "end", "location", "attendees": [addr], "description"}
Dates are ISO 8601 strings with an offset, kept as written.

An imported world also keeps, in metadata, the ids and calendar details its files came
with (KEPT_KEYS; parse_kept checks them): the renderers write those instead of deriving
their own, so a prompt or rubric that names an item still finds it after a re-export.
"""

import datetime as dt
import re
import zoneinfo
from email.utils import getaddresses

from .base import RenderError, WorldItem

EMAIL = re.compile(r"^[^@\s<>(),;:\"\[\]\\]+@[^@\s<>(),;:\"\[\]\\]+\.[^@\s<>(),;:\"\[\]\\]+$")
NEEDS_QUOTES = re.compile(r"[,;<>@\"()\[\]:\\]")
SUMMARY_MAX, LOCATION_MAX, DESCRIPTION_MAX = 500, 500, 8000


def parse_when(value: object, field: str) -> dt.datetime:
    text = str(value or "").strip()
    if not text:
        raise RenderError(
            f"metadata {field!r} is missing; write an ISO 8601 date and time with its offset, e.g. 2026-01-05T09:30:00+01:00."
        )
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise RenderError(f"metadata {field!r}: {text!r} is not an ISO 8601 date and time (e.g. 2026-01-05T09:30:00+01:00).") from None
    if when.tzinfo is None or when.utcoffset() is None:
        # (the example is the value itself, made whole: a date alone gets its midnight, so the example parses)
        example = when.replace(tzinfo=dt.UTC).isoformat()
        raise RenderError(f"metadata {field!r}: {text!r} has no time and UTC offset; write it in full, e.g. {example}."
                          if len(text) <= 10 else f"metadata {field!r}: {text!r} has no UTC offset; add one, e.g. {example}.")
    return when


OUTSIDE_QUOTES_COMMA = re.compile(r',(?=(?:[^"]*"[^"]*")*[^"]*$)')


def parse_addresses(value: object, field: str, *, required: bool = False) -> list[dict]:
    text = ", ".join(value) if isinstance(value, list) else str(value or "")
    for entry in OUTSIDE_QUOTES_COMMA.split(text):
        entry = entry.strip()
        if entry and not EMAIL.match(entry) and not re.search(r"<[^<>]+>\s*$", entry):
            raise RenderError(f"metadata {field!r}: {entry!r} is not an email address; write 'Name <name@example.com>'"
                              + (", several separated by commas." if field != "from" else "."))
    found = [{"name": name.strip(), "email": addr.strip()} for name, addr in getaddresses([text]) if name or addr]
    for a in found:
        if not EMAIL.match(a["email"]):
            raise RenderError(f"metadata {field!r}: {a['email']!r} is not a valid email address.")
    if required and not found:
        raise RenderError(f"metadata {field!r} is missing; write 'Name <name@example.com>'.")
    return found


def format_address(a: dict) -> str:
    name = " ".join(str(a.get("name") or "").split())
    addr = str(a.get("email") or "").strip()
    if not name:
        return addr
    if NEEDS_QUOTES.search(name):
        name = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{name} <{addr}>"


def format_addresses(items: object) -> str:
    if isinstance(items, str):
        return items
    if isinstance(items, dict):
        items = [items]
    return ", ".join(format_address(a) for a in items or [] if isinstance(a, dict) and a.get("email"))


def _paths(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(p).strip() for p in value if str(p).strip()]
    return [p.strip() for p in str(value or "").split(",") if p.strip()]


def _one(value: object, field: str) -> dict:
    found = parse_addresses(value, field, required=True)
    if len(found) > 1:
        raise RenderError(f"metadata {field!r} names {len(found)} people; it takes one 'Name <address>'.")
    return found[0]


# --- email -------------------------------------------------------------------------------------

def parse_email(content: str, metadata: dict) -> dict:
    structured = {
        "from": _one(metadata.get("from"), "from"),
        "to": parse_addresses(metadata.get("to"), "to"),
        "cc": parse_addresses(metadata.get("cc"), "cc"),
        "bcc": parse_addresses(metadata.get("bcc"), "bcc"),
        "date": str(metadata.get("date") or "").strip(),
        "subject": " ".join(str(metadata.get("subject") or "").split()),
        "attachments": _paths(metadata.get("attachments")),
        "body": content or "",
    }
    parse_when(structured["date"], "date")
    if not (structured["to"] or structured["cc"] or structured["bcc"]):
        raise RenderError("metadata 'to' is missing: an email needs at least one recipient in to, cc or bcc.")
    return structured


def email_metadata(structured: dict) -> dict:
    return {
        "from": format_addresses(structured.get("from")),
        "to": format_addresses(structured.get("to")),
        "cc": format_addresses(structured.get("cc")),
        "bcc": format_addresses(structured.get("bcc")),
        "date": str(structured.get("date") or ""),
        "subject": " ".join(str(structured.get("subject") or "").split()),
        "attachments": ", ".join(_paths(structured.get("attachments"))),
    }


# --- chat --------------------------------------------------------------------------------------

def parse_chat(content: str, metadata: dict) -> dict:
    structured = {
        "channel": " ".join(str(metadata.get("channel") or "").split()),
        "from": _one(metadata.get("from") or metadata.get("author"), "from"),
        "date": str(metadata.get("date") or "").strip(),
        "text": content or "",
    }
    if not structured["channel"]:
        raise RenderError("metadata 'channel' is missing: a chat message belongs to a channel, e.g. 'deal-team'.")
    parse_when(structured["date"], "date")
    return structured


def chat_metadata(structured: dict) -> dict:
    return {
        "channel": " ".join(str(structured.get("channel") or "").split()),
        "from": format_addresses(structured.get("from")),
        "date": str(structured.get("date") or ""),
    }


# --- event -------------------------------------------------------------------------------------

def parse_event(content: str, metadata: dict) -> dict:
    structured = {
        "subject": " ".join(str(metadata.get("subject") or "").split()),
        "start": str(metadata.get("start") or "").strip(),
        "end": str(metadata.get("end") or "").strip(),
        "location": " ".join(str(metadata.get("location") or "").split()),
        "attendees": parse_addresses(metadata.get("attendees"), "attendees"),
        "description": content or "",
    }
    if not structured["subject"]:
        raise RenderError("metadata 'subject' is missing: it is the event's title.")
    start, end = parse_when(structured["start"], "start"), parse_when(structured["end"], "end")
    if end < start:
        raise RenderError(f"metadata 'end' ({structured['end']}) is before 'start' ({structured['start']}).")
    for field, limit in (("subject", SUMMARY_MAX), ("location", LOCATION_MAX)):
        if len(structured[field]) > limit:
            raise RenderError(f"metadata {field!r} is {len(structured[field])} characters; calendars take at most {limit}.")
    if len(structured["description"]) > DESCRIPTION_MAX:
        raise RenderError(f"The agenda is {len(structured['description'])} characters; calendars take at most {DESCRIPTION_MAX}.")
    return structured


def event_metadata(structured: dict) -> dict:
    return {
        "subject": " ".join(str(structured.get("subject") or "").split()),
        "start": str(structured.get("start") or ""),
        "end": str(structured.get("end") or ""),
        "location": " ".join(str(structured.get("location") or "").split()),
        "attendees": format_addresses(structured.get("attendees")),
    }


# --- what an imported world came with ----------------------------------------------

KEPT_KEYS = {
    "email": ("message_id", "thread_id"),
    "chat": ("message_id", "topic_id", "group_id", "user_id"),
    "event": ("uid", "all_day", "tzid", "rrule", "exdate", "partstat"),
}
MAIL_ID = re.compile(r"^<[^<>\s]{1,250}>$")
CHAT_ID_PART = re.compile(r"^[^/\s]{1,200}$")
# group_id and user_id name folders of the zip (Groups/<id>/, Users/<id>/): one safe segment.
FOLDER_NAME = re.compile(r"^(?!\.{1,2}$)[^/\\\x00-\x1f\x7f]{1,100}$")
PARTSTATS = {"NEEDS-ACTION", "ACCEPTED", "DECLINED", "TENTATIVE", "DELEGATED"}


def _kept_text(metadata: dict, key: str) -> str:
    value = metadata.get(key)
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or any(ord(ch) < 32 for ch in value):
        raise RenderError(f"metadata {key!r} must be one line of text.")
    return value.strip()


def parse_kept(kind: str, metadata: dict) -> dict:
    """The KEPT_KEYS of one email, chat message or event, checked, in the form the
    renderers use (absent keys are "", False, [] or {}). Raises RenderError naming the key."""
    kept = {key: _kept_text(metadata, key) for key in KEPT_KEYS[kind] if key not in ("all_day", "exdate", "partstat")}
    if kind == "email":
        for key in ("message_id", "thread_id"):
            if kept[key] and not MAIL_ID.match(kept[key]):
                raise RenderError(f"metadata {key!r}: {kept[key]!r} is not a Message-ID (one <id@domain> in angle brackets).")
    elif kind == "chat":
        parts = kept["message_id"].split("/") if kept["message_id"] else []
        if kept["message_id"] and (len(parts) != 3 or not all(CHAT_ID_PART.match(p) for p in parts)):
            raise RenderError(f"metadata 'message_id': {kept['message_id']!r} is not a chat message id (<space>/<topic_id>/<unique>).")
        if kept["topic_id"] and not CHAT_ID_PART.match(kept["topic_id"]):
            raise RenderError(f"metadata 'topic_id': {kept['topic_id']!r} is not a topic id (no '/' or spaces).")
        if parts and kept["topic_id"] and parts[1] != kept["topic_id"]:
            raise RenderError(f"metadata 'message_id' ({kept['message_id']}) is not in topic {kept['topic_id']!r}.")
        for key in ("group_id", "user_id"):
            if kept[key] and not FOLDER_NAME.match(kept[key]):
                raise RenderError(f"metadata {key!r}: {kept[key]!r} cannot be a folder name (no '/', '\\' or control characters).")
    else:
        if len(kept["uid"]) > 255:
            raise RenderError("metadata 'uid' is longer than 255 characters.")
        kept.update(_calendar_kept(metadata, kept))
    return kept


def _calendar_kept(metadata: dict, kept: dict) -> dict:
    all_day = metadata.get("all_day", False)
    if isinstance(all_day, str) and all_day.strip().lower() in ("", "true", "false"):
        all_day = all_day.strip().lower() == "true"
    if not isinstance(all_day, bool):
        raise RenderError("metadata 'all_day' is 'true' or 'false'.")
    if kept["tzid"]:
        try:
            zoneinfo.ZoneInfo(kept["tzid"])
        except (ValueError, zoneinfo.ZoneInfoNotFoundError):
            raise RenderError(f"metadata 'tzid': {kept['tzid']!r} is not a time zone name such as Europe/London.") from None
    if kept["rrule"]:
        from icalendar import vRecur

        try:
            if "FREQ" not in vRecur.from_ical(kept["rrule"]):
                raise ValueError("no FREQ")
        except ValueError:
            raise RenderError(f"metadata 'rrule': {kept['rrule']!r} is not a recurrence rule (e.g. FREQ=WEEKLY;COUNT=10).") from None
    exdates = [parse_when(text, "exdate") for text in _paths(metadata.get("exdate"))]
    partstat: dict[str, str] = {}
    for entry in _paths(metadata.get("partstat")):
        address, _, status = entry.rpartition("=")
        if not EMAIL.match(address.strip()) or status.strip().upper() not in PARTSTATS:
            raise RenderError(f"metadata 'partstat': {entry!r} is not 'name@example.com=ACCEPTED' "
                              f"(one of {', '.join(sorted(PARTSTATS))}).")
        partstat[address.strip().lower()] = status.strip().upper()
    return {"all_day": all_day, "exdate": exdates, "partstat": partstat}


# --- items of a world ----------------------------------------------------------------------

def parse_items(items: list[WorldItem], parse, noun: str) -> dict[str, tuple[WorldItem, dict, dt.datetime]]:
    by_path: dict = {}
    for item in items:
        if item.path in by_path:
            raise RenderError(f"{item.path}: two {noun}s have this path.")
        try:
            structured = parse(item.content, item.metadata)
        except RenderError as exc:
            raise RenderError(f"{item.path}: {exc.message}") from None
        when_key = "date" if "date" in structured else "start"
        by_path[item.path] = (item, structured, parse_when(structured[when_key], when_key))
    return by_path


def _a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def thread_roots(by_path: dict, noun: str, *, dated: bool = True) -> dict[str, str]:
    """path → path of its thread's root, following metadata['thread'] to the first message.
    With `dated`, no message may be older than its root (mail: In-Reply-To and References
    chain by date). Chat says which message is the root by its ids, not its date, and a
    reply may carry an earlier timestamp than its root: there, dated=False."""
    roots: dict[str, str] = {}
    for path in by_path:
        seen = [path]
        current = path
        while True:
            parent = str(by_path[current][0].metadata.get("thread") or "").strip()
            if not parent or parent == current:
                break
            if parent not in by_path:
                raise RenderError(f"{current}: metadata 'thread' is {parent!r}, which is not {_a(noun)} of this world "
                                  f"(it must be the path of the thread's first {noun}).")
            if parent in seen:
                raise RenderError(f"{path}: metadata 'thread' goes round in a circle ({' → '.join([*seen, parent])}).")
            seen.append(parent)
            current = parent
        roots[path] = current
    for path, root in roots.items() if dated else ():
        if by_path[path][2] < by_path[root][2]:
            raise RenderError(f"{path}: dated {by_path[path][1].get('date')}, before its thread's first {noun} {root} "
                              f"({by_path[root][1].get('date')}).")
    return roots
