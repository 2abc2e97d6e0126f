"""Reading a world's mail, chat and calendar back into documents (the inverse of
authoring.rendering's render_mbox, render_chat and render_ics for Taskwright's own
output; lenient with what other tools write).

Each reader returns AppItems: one email, chat message or event with its metadata in
the docs/content-format.md conventions, its id in the file (Message-ID, message_id,
UID), the other ids it came with (`raw`: X-Thread-ID; chat group, topic and user ids),
a path to use when the world does not name one, and the id of its thread's root.
Which of those ids go into the document's metadata is decided once paths are known
(kept.py): only those that differ from the ones Taskwright would derive.
"""

import datetime as dt
import json
import mailbox
import re
import tempfile
import zoneinfo
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from authoring.extraction.mail import html_to_text
from authoring.rendering.headers import PARTSTATS, format_address, format_addresses
from core.exceptions import ApplicationError


@dataclass
class AppItem:
    kind: str  # email, chat or event
    id: str  # Message-ID, chat message_id or event UID; "" when the file has none
    content: str
    metadata: dict
    suggested_path: str
    root_id: str = ""  # the id of the thread's first message ("" or its own id for a root)
    when: dt.datetime | None = None
    notes: list[str] = field(default_factory=list)
    raw: dict = field(default_factory=dict)  # the other ids the file gave it (see the module's note)


_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f/\\]")


def name_part(text: str, fallback: str, limit: int = 80) -> str:
    """Text made into one segment of a data-room path."""
    text = " ".join(_UNSAFE_NAME.sub(" ", text or "").split()).strip(" .")
    return (text[:limit].rstrip(" .") or fallback) if text else fallback


def settle_threads(items: list[AppItem]) -> None:
    """Every mail thread's root is present and no message of the thread is older than it
    (In-Reply-To and References chain by date); otherwise the thread's oldest message
    becomes its root. The X-Thread-ID the messages came with is kept all the same (raw).
    Chat never goes through this: its ids say which message is the root."""
    present = {item.id for item in items if item.id}
    groups: dict[str, list[AppItem]] = {}
    for item in items:
        if item.root_id and item.root_id != item.id:
            groups.setdefault(item.root_id, []).append(item)
    by_id = {item.id: item for item in items if item.id}
    for root_id, members in groups.items():
        thread = ([by_id[root_id]] if root_id in present else []) + members
        dated = [m for m in thread if m.when is not None]
        root = by_id.get(root_id)
        if root is None or (root.when is not None and any(m.when < root.when for m in dated)):
            oldest = min(dated, key=lambda m: m.when) if dated else thread[0]
            for member in thread:
                member.root_id = oldest.id if oldest.id else ""


# --- mail ----------------------------------------------------------------------------------

def read_mbox(data: bytes, label: str) -> list[AppItem]:
    """Every message of an mbox, read with the standard library's mbox reader."""
    with tempfile.NamedTemporaryFile(suffix=".mbox") as spool:
        spool.write(data)
        spool.flush()
        box = mailbox.mbox(spool.name, create=False)
        try:
            raws = [box.get_bytes(key) for key in box.iterkeys()]
        except Exception as exc:
            raise ApplicationError(f"{label} is not a readable mbox ({type(exc).__name__}).") from None
        finally:
            box.close()
    items = [_email(BytesParser(policy=policy.default).parsebytes(raw)) for raw in raws]
    settle_threads(items)
    return items


def _header(message: EmailMessage, name: str) -> str:
    try:
        value = message.get(name)
    except Exception:  # a header the parser cannot make sense of
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def _addresses(message: EmailMessage, name: str) -> str:
    try:
        header = message.get(name)
        if header is None:
            return ""
        found = [{"name": _unescaped(a.display_name), "email": _unescaped(a.addr_spec)} for a in header.addresses if a.addr_spec]
    except Exception:
        return _header(message, name)
    return format_addresses(found)


def _unescaped(text: str) -> str:
    """The standard library's address parser leaves raw UTF-8 bytes of an unquoted display
    name (Marc Zoë <…>) as surrogate escapes; they are the name's UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _date(message: EmailMessage) -> dt.datetime | None:
    try:
        when = getattr(message.get("date"), "datetime", None)
    except Exception:
        return None
    if when is None:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)  # "-0000": zone unknown, call it UTC


def _ids(text: str) -> list[str]:
    return re.findall(r"<[^<>\s]+>", text or "")


def _email(message: EmailMessage) -> AppItem:
    own = next(iter(_ids(_header(message, "message-id"))), "")
    thread_header = next(iter(_ids(_header(message, "x-thread-id"))), "")
    # other tools thread by References (its first id is the root) or In-Reply-To
    thread = thread_header or next(iter(_ids(_header(message, "references")) or _ids(_header(message, "in-reply-to"))), "")
    metadata, when = email_headers(message)
    subject = metadata["subject"]
    notes = []
    body = message.get_body(preferencelist=("plain", "html"))
    content = ""
    if body is not None:
        try:
            content = body.get_content()
        except (LookupError, UnicodeError, AssertionError, ValueError):  # unknown or lying charset
            content = (body.get_payload(decode=True) or b"").decode("utf-8", "replace")
        if body.get_content_subtype() == "html":
            content = html_to_text(content) + "\n"
            notes.append("The email had only an HTML body; it was converted to plain text.")
    attached = [part.get_filename() or "unnamed" for part in message.iter_attachments()]
    if attached:  # the layout names attachments in X-Attachments (files under filesystem/), not as MIME parts
        notes.append(f"MIME attachments not imported: {', '.join(attached)[:300]}.")
    stamp = f"{when:%Y-%m-%d %H%M} " if when else ""
    return AppItem(
        kind="email", id=own, content=content, metadata={k: v for k, v in metadata.items() if v},
        suggested_path=f"Mail/{stamp}{name_part(subject, 'No subject')}.eml", root_id=thread, when=when, notes=notes,
        raw={"thread_id": thread_header},
    )


def email_headers(message: EmailMessage) -> tuple[dict, dt.datetime | None]:
    """An email's metadata from its headers (every key; "" when absent). X-Attachments
    paths are absolute from the drive's root (/Deal/Memo.docx) or, from older or other
    tools, relative; metadata holds data-room paths (Deal/Memo.docx)."""
    when = _date(message)
    return {
        "from": _addresses(message, "from"),
        "to": _addresses(message, "to"),
        "cc": _addresses(message, "cc"),
        "bcc": _addresses(message, "bcc"),
        "date": when.isoformat() if when else "",
        "subject": _header(message, "subject"),
        "attachments": ", ".join(p.strip().lstrip("/") for p in _header(message, "x-attachments").split(",") if p.strip().lstrip("/")),
    }, when


# --- chat ----------------------------------------------------------------------------------

_GOOGLE_DATE = "%A, %B %d, %Y at %I:%M:%S %p %Z"


def parse_created(value: object) -> dt.datetime | None:
    """A chat created_date: ISO 8601 (what Taskwright writes) or Google Chat's export
    form, "Monday, January 5, 2026 at 9:30:00 AM UTC"."""
    text = " ".join(str(value or "").replace("\u202f", " ").split())
    if not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        try:
            when = dt.datetime.strptime(text, _GOOGLE_DATE)
        except ValueError:
            return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _json(data: bytes, label: str):
    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApplicationError(f"{label} is not valid JSON ({exc}).") from None


def read_chat_group(group_id: str, messages: bytes, info: bytes | None, label: str, users: dict[str, str] | None = None) -> list[AppItem]:
    """One Groups/<group_id>/ folder: its messages, in file (display) order. A thread's
    root is the message whose message_id ends with its topic_id, wherever the file puts it
    and whatever its date; a topic without one has its first message stand for it.
    `users`: email (lower case) → the user id of its Users/<id>/ folder."""
    raw = _json(messages, label)
    rows = raw.get("messages") if isinstance(raw, dict) else raw
    if not isinstance(rows, list):
        raise ApplicationError(f'{label} must hold {{"messages": [...]}}.')
    group = _json(info, label.replace("messages.json", "group_info.json")) if info is not None else {}
    channel = " ".join(str((group.get("name") if isinstance(group, dict) else "") or "").split())
    channel = channel or " ".join(group_id.removeprefix("Space ").split()) or "chat"
    roots: dict[str, str] = {}  # topic_id → message_id of its root
    for row in rows:
        if isinstance(row, dict) and row.get("topic_id") and str(row.get("message_id") or "").rsplit("/", 1)[-1] == str(row["topic_id"]):
            roots.setdefault(str(row["topic_id"]), str(row["message_id"]))
    items = []
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise ApplicationError(f"{label}: message {n} is not a JSON object.")
        metadata, when = chat_row_metadata(row, channel)
        own, topic = str(row.get("message_id") or ""), str(row.get("topic_id") or "")
        if topic and topic not in roots:
            roots[topic] = own  # no root in the file: the topic's first message stands for it
        creator = row.get("creator") if isinstance(row.get("creator"), dict) else {}
        email = str(creator.get("email") or "").strip().lower()
        items.append(AppItem(
            kind="chat", id=own, content=str(row.get("text") or ""), metadata={k: v for k, v in metadata.items() if v},
            suggested_path=f"Chat/{name_part(channel, 'chat')}/{n:03d}", root_id=roots.get(topic, ""), when=when,
            raw={"group_id": group_id, "topic_id": topic, "user_id": (users or {}).get(email, "")},
        ))
    return items


def chat_row_metadata(row: dict, channel: str) -> tuple[dict, dt.datetime | None]:
    creator = row.get("creator") if isinstance(row.get("creator"), dict) else {}
    person = {"name": str(creator.get("name") or ""), "email": str(creator.get("email") or "")}
    when = parse_created(row.get("created_date"))
    return {
        "channel": " ".join(channel.split()),
        "from": format_address(person) if person["email"] else person["name"],
        "date": when.isoformat() if when else str(row.get("created_date") or ""),
    }, when


def read_chat_users(files: dict[str, bytes]) -> dict[str, str]:
    """{user id: user_info.json bytes} → email (lower case) → user id. Unreadable or
    address-less ones are left out: the ids are only kept, never needed."""
    users: dict[str, str] = {}
    for uid, data in sorted(files.items()):
        try:
            user = json.loads(data.decode("utf-8-sig")).get("user") or {}
            email = str(user.get("email") or "").strip().lower()
        except (UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            continue
        if email:
            users.setdefault(email, uid)
    return users


# --- calendar ------------------------------------------------------------------------------

def _moment(value) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date):  # an all-day event starts at midnight UTC
        return dt.datetime.combine(value, dt.time(0), tzinfo=dt.UTC)
    return None


def _zone(prop) -> str:
    """The time zone of a DTSTART as a name Taskwright can write back (IANA), or ""."""
    value = getattr(prop, "dt", None)
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        return ""
    for name in (str(getattr(prop, "params", {}).get("TZID") or ""), str(getattr(value.tzinfo, "key", "") or "")):
        try:
            if name and name != "UTC":
                zoneinfo.ZoneInfo(name)
                return name
        except (ValueError, zoneinfo.ZoneInfoNotFoundError):
            continue
    return ""


def _all(value) -> list:
    return value if isinstance(value, list) else [value] if value is not None else []


def event_metadata(event) -> tuple[dict, dt.datetime | None]:
    """One VEVENT's metadata (every key; "" when absent), what it came with included."""
    start_prop = event.get("dtstart")
    start, end = _moment(getattr(start_prop, "dt", None)), _moment(getattr(event.get("dtend"), "dt", None))
    if end is None and start is not None:
        duration = getattr(event.get("duration"), "dt", None)
        end = start + duration if isinstance(duration, dt.timedelta) else start
    people, partstat = [], []
    for attendee in _all(event.get("attendee")):
        email = re.sub(r"^mailto:", "", str(attendee), flags=re.IGNORECASE).strip()
        params = getattr(attendee, "params", {})
        name = str(params.get("CN") or "")
        if email:
            people.append({"name": "" if name == email else name, "email": email})
            status = str(params.get("PARTSTAT") or "").upper()
            if status in PARTSTATS:
                partstat.append(f"{email}={status}")
    exdates = [_moment(d.dt) for prop in _all(event.get("exdate")) for d in getattr(prop, "dts", [])]
    rrules = _all(event.get("rrule"))
    all_day = isinstance(getattr(start_prop, "dt", None), dt.date) and not isinstance(start_prop.dt, dt.datetime)
    return {
        "subject": " ".join(str(event.get("summary") or "").split()),
        "start": start.isoformat() if start else "",
        "end": end.isoformat() if end else "",
        "location": " ".join(str(event.get("location") or "").split()),
        "attendees": format_addresses(people),
        "all_day": "true" if all_day else "",
        "tzid": "" if all_day else _zone(start_prop),
        "rrule": rrules[0].to_ical().decode() if rrules else "",
        "exdate": ", ".join(d.isoformat() for d in exdates if d is not None),
        "partstat": ", ".join(partstat),
    }, start


def read_calendar(data: bytes, label: str) -> list[AppItem]:
    from icalendar import Calendar

    try:
        calendar = Calendar.from_ical(data)
    except Exception as exc:  # icalendar raises ValueError and friends on malformed text
        raise ApplicationError(f"{label} is not valid iCalendar ({type(exc).__name__}: {str(exc)[:200]}).") from None
    items = []
    for event in calendar.walk("VEVENT"):
        try:
            metadata, start = event_metadata(event)
        except Exception as exc:  # a value icalendar parsed but cannot give (a bad RRULE, an odd EXDATE)
            raise ApplicationError(
                f"{label}: the event {str(event.get('uid') or '')[:80]!r} cannot be read ({type(exc).__name__})."
            ) from None
        stamp = f"{start:%Y-%m-%d} " if start else ""
        items.append(AppItem(
            kind="event", id=str(event.get("uid") or ""), content=str(event.get("description") or ""),
            metadata={k: v for k, v in metadata.items() if v}, suggested_path=f"Calendar/{stamp}{name_part(metadata['subject'], 'Event')}",
            when=start,
        ))
    return items
