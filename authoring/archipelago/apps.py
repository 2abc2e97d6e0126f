"""Reading a world's mail, chat and calendar back into documents (the inverse of
authoring.rendering's render_mbox, render_chat and render_ics for Taskwright's own
output; lenient with what other tools write).

Each reader returns AppItems: one email, chat message or event with its metadata in
the docs/content-format.md conventions, its id in the file (Message-ID, message_id,
UID), a path to use when the world does not name one, and the id of its thread's root.
"""

import datetime as dt
import json
import mailbox
import re
import tempfile
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from authoring.extraction.mail import html_to_text
from authoring.rendering.headers import format_address, format_addresses
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


_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f/\\]")


def name_part(text: str, fallback: str, limit: int = 80) -> str:
    """Text made into one segment of a data-room path."""
    text = " ".join(_UNSAFE_NAME.sub(" ", text or "").split()).strip(" .")
    return (text[:limit].rstrip(" .") or fallback) if text else fallback


def settle_threads(items: list[AppItem]) -> None:
    """Every thread's root is present and no message of the thread is older than it (the
    renderer's rule); otherwise the thread's oldest message becomes its root."""
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
        found = [{"name": a.display_name, "email": a.addr_spec} for a in header.addresses if a.addr_spec]
    except Exception:
        return _header(message, name)
    return format_addresses(found)


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
    thread = next(iter(_ids(_header(message, "x-thread-id"))), "")
    if not thread:  # other tools thread by References (its first id is the root) or In-Reply-To
        thread = next(iter(_ids(_header(message, "references")) or _ids(_header(message, "in-reply-to"))), "")
    when = _date(message)
    subject = _header(message, "subject")
    metadata = {
        "from": _addresses(message, "from"),
        "to": _addresses(message, "to"),
        "cc": _addresses(message, "cc"),
        "bcc": _addresses(message, "bcc"),
        "date": when.isoformat() if when else "",
        "subject": subject,
        "attachments": ", ".join(p.strip() for p in _header(message, "x-attachments").split(",") if p.strip()),
    }
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
    )


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


def read_chat_group(group_id: str, messages: bytes, info: bytes | None, label: str) -> list[AppItem]:
    """One Groups/<group_id>/ folder: its messages, in file (display) order."""
    raw = _json(messages, label)
    rows = raw.get("messages") if isinstance(raw, dict) else raw
    if not isinstance(rows, list):
        raise ApplicationError(f'{label} must hold {{"messages": [...]}}.')
    group = _json(info, label.replace("messages.json", "group_info.json")) if info is not None else {}
    channel = " ".join(str((group.get("name") if isinstance(group, dict) else "") or "").split())
    channel = channel or " ".join(group_id.removeprefix("Space ").split()) or "chat"
    roots: dict[str, str] = {}  # topic_id → message_id of its root
    for row in rows:
        if isinstance(row, dict) and row.get("topic_id") and str(row.get("message_id") or "").rsplit("/", 1)[-1] == row["topic_id"]:
            roots.setdefault(str(row["topic_id"]), str(row["message_id"]))
    items = []
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise ApplicationError(f"{label}: message {n} is not a JSON object.")
        creator = row.get("creator") if isinstance(row.get("creator"), dict) else {}
        person = {"name": str(creator.get("name") or ""), "email": str(creator.get("email") or "")}
        when = parse_created(row.get("created_date"))
        own, topic = str(row.get("message_id") or ""), str(row.get("topic_id") or "")
        if topic and topic not in roots:
            roots[topic] = own  # no root in the file: the topic's first message stands for it
        metadata = {
            "channel": channel,
            "from": format_address(person) if person["email"] else person["name"],
            "date": when.isoformat() if when else str(row.get("created_date") or ""),
        }
        items.append(AppItem(
            kind="chat", id=own, content=str(row.get("text") or ""), metadata={k: v for k, v in metadata.items() if v},
            suggested_path=f"Chat/{name_part(channel, 'chat')}/{n:03d}", root_id=roots.get(topic, ""), when=when,
        ))
    settle_threads(items)
    return items


# --- calendar ------------------------------------------------------------------------------

def _moment(prop) -> dt.datetime | None:
    value = getattr(prop, "dt", None)
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date):  # an all-day event starts at midnight UTC
        return dt.datetime.combine(value, dt.time(0), tzinfo=dt.UTC)
    return None


def read_calendar(data: bytes, label: str) -> list[AppItem]:
    from icalendar import Calendar

    try:
        calendar = Calendar.from_ical(data)
    except Exception as exc:  # icalendar raises ValueError and friends on malformed text
        raise ApplicationError(f"{label} is not valid iCalendar ({type(exc).__name__}: {str(exc)[:200]}).") from None
    items = []
    for event in calendar.walk("VEVENT"):
        start = _moment(event.get("dtstart"))
        end = _moment(event.get("dtend"))
        if end is None and start is not None:
            duration = getattr(event.get("duration"), "dt", None)
            end = start + duration if isinstance(duration, dt.timedelta) else start
        attendees = event.get("attendee") or []
        people = []
        for attendee in attendees if isinstance(attendees, list) else [attendees]:
            email = re.sub(r"^mailto:", "", str(attendee), flags=re.IGNORECASE).strip()
            name = str(getattr(attendee, "params", {}).get("CN") or "")
            if email:
                people.append({"name": "" if name == email else name, "email": email})
        subject = " ".join(str(event.get("summary") or "").split())
        metadata = {
            "subject": subject,
            "start": start.isoformat() if start else "",
            "end": end.isoformat() if end else "",
            "location": " ".join(str(event.get("location") or "").split()),
            "attendees": format_addresses(people),
        }
        stamp = f"{start:%Y-%m-%d} " if start else ""
        items.append(AppItem(
            kind="event", id=str(event.get("uid") or ""), content=str(event.get("description") or ""),
            metadata={k: v for k, v in metadata.items() if v}, suggested_path=f"Calendar/{stamp}{name_part(subject, 'Event')}",
            when=start,
        ))
    return items
