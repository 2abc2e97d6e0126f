"""Emails as .eml and a world's mail as one mbox (FORMATS.md, "Mail").

Message-IDs are derived from (world_key, document path), never random, so exporting the
same world twice, or after an import that keeps paths, gives identical files. Threads:
metadata["thread"] is the path of the thread's first email; every message of a thread
(the root included) carries X-Thread-ID = the root's Message-ID, and In-Reply-To /
References point to the previous message of the thread by date.
"""

import datetime as dt
import io
import re
from email import policy
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.utils import format_datetime

from .base import WorldItem, stable_hex
from .headers import format_address, format_addresses, parse_email, parse_items, parse_when, thread_roots

FROM_LINE = re.compile(r"^From ", re.MULTILINE)
MAX_REFERENCES = 20  # root + the most recent ones, as mail clients trim long chains
# LF line ends in both: readers accept them, and a body read back keeps plain "\n".
_FILE_POLICY = policy.default.clone(linesep="\n")


def message_id(world_key: str, path: str) -> str:
    return f"<{stable_hex('mail', world_key, path)}@taskwright.local>"


def build_message(structured: dict, *, msg_id: str, thread_id: str, previous: list[str]) -> EmailMessage:
    when = parse_when(structured["date"], "date")
    msg = EmailMessage(policy=policy.default)
    msg["Message-ID"] = msg_id
    msg["Date"] = format_datetime(when)  # keeps the written offset: "+0100", "+0000", never "-0000"
    msg["From"] = format_address(structured["from"])
    for header, key in (("To", "to"), ("Cc", "cc"), ("Bcc", "bcc")):
        if structured[key]:
            msg[header] = format_addresses(structured[key])
    msg["Subject"] = structured["subject"]
    if previous:
        msg["In-Reply-To"] = previous[-1]
        refs = previous if len(previous) <= MAX_REFERENCES else [previous[0], *previous[-(MAX_REFERENCES - 1):]]
        msg["References"] = " ".join(refs)
    msg["X-Thread-ID"] = thread_id
    if structured["attachments"]:
        msg["X-Attachments"] = ", ".join(structured["attachments"])
    msg["X-Body-Format"] = "plain"
    body = structured["body"] if structured["body"].endswith("\n") else structured["body"] + "\n"
    if FROM_LINE.search(body):
        # An mbox reader splits messages at lines starting "From "; the usual ">From" quoting
        # would change the text an agent reads. Quoted-printable "=46rom" decodes back exactly.
        msg.set_content(body, subtype="plain", charset="utf-8", cte="quoted-printable")
        msg.set_payload(FROM_LINE.sub("=46rom ", msg.get_payload()))
    else:
        msg.set_content(body, subtype="plain", charset="utf-8")
    return msg


def _bytes(msg: EmailMessage, pol, *, mangle_from: bool) -> bytes:
    out = io.BytesIO()
    BytesGenerator(out, mangle_from_=mangle_from, policy=pol).flatten(msg)
    return out.getvalue()


def render_eml(content: str, metadata: dict, *, path: str, world_key: str = "") -> bytes:
    """One email on its own. Without the rest of the world, a reply's In-Reply-To and
    References name the thread's root; the mbox (render_mbox) chains them exactly."""
    structured = parse_email(content, metadata)
    root = str(metadata.get("thread") or "").strip()
    own = message_id(world_key, path)
    thread_id = message_id(world_key, root) if root and root != path else own
    previous = [thread_id] if thread_id != own else []
    return _bytes(build_message(structured, msg_id=own, thread_id=thread_id, previous=previous), _FILE_POLICY, mangle_from=False)


def render_mbox(emails: list[WorldItem], *, world_key: str = "") -> bytes:
    """All the world's email in one mbox, oldest first."""
    by_path = parse_items(emails, parse_email, "email")
    roots = thread_roots(by_path, "email")
    ordered = sorted(by_path, key=lambda p: (by_path[p][2].astimezone(dt.UTC), p))
    earlier: dict[str, list[str]] = {}  # root → Message-IDs of the thread so far
    out = io.BytesIO()
    for path in ordered:
        _item, structured, when = by_path[path]
        root = roots[path]
        thread = earlier.setdefault(root, [])
        own = message_id(world_key, path)
        msg = build_message(structured, msg_id=own, thread_id=message_id(world_key, root), previous=list(thread))
        thread.append(own)
        utc = when.astimezone(dt.UTC)
        out.write(f"From {structured['from']['email']} {utc:%a %b} {utc.day:2d} {utc:%H:%M:%S %Y}\n".encode())
        out.write(_bytes(msg, _FILE_POLICY, mangle_from=True))
        out.write(b"\n")
    return out.getvalue()
