"""Emails as .eml and a world's mail as one mbox (FORMATS.md, "Mail").

Message-IDs are derived from (world_key, document path), never random, so exporting the
same world twice, or after an import that keeps paths, gives identical files; an
imported email keeps its own (metadata message_id, thread_id). Threads:
metadata["thread"] is the path of the thread's first email; every message of a thread
(the root included) carries X-Thread-ID = the root's Message-ID, and In-Reply-To /
References point to the previous message of the thread by date.

Headers are written as raw UTF-8 (RFC 6532), not RFC 2047 encoded-words: Archipelago's
mail reader shows "=?utf-8?b?4oCU?=" for a subject's "—" as it is. The standard library
reads both forms back. The single .eml is the same message as in the mbox, so a
download and the world agree byte for byte.
"""

import datetime as dt
import io
import re
from email import policy
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.utils import format_datetime

from .base import RenderError, WorldItem, stable_hex
from .headers import format_address, format_addresses, parse_email, parse_items, parse_kept, parse_when, thread_roots

FROM_LINE = re.compile(r"^From ", re.MULTILINE)
MAX_REFERENCES = 20  # root + the most recent ones, as mail clients trim long chains
# LF line ends in both: readers accept them, and a body read back keeps plain "\n".
# utf8=True: non-ASCII header text is written as raw UTF-8 (still folded at 78 columns).
FILE_POLICY = policy.default.clone(linesep="\n", utf8=True)
MAX_HEADER_LINE = 998  # RFC 5322: octets per line, CRLF excluded (78 is only a "should")
# A word longer than a 78-column line (a URL in a subject) makes the folder fall back to
# encoded-words even with utf8=True; such a message is folded wider instead. The folder
# counts characters, the limit is in bytes: 249 characters of UTF-8 always fit in 998.
WIDER_POLICIES = (FILE_POLICY.clone(max_line_length=MAX_HEADER_LINE // 4), FILE_POLICY.clone(max_line_length=MAX_HEADER_LINE))


def message_id(world_key: str, path: str) -> str:
    return f"<{stable_hex('mail', world_key, path)}@taskwright.local>"


def email_message_id(metadata: dict, *, world_key: str, path: str) -> str:
    """The Message-ID an email is written with: the one it was imported with, or derived."""
    return parse_kept("email", metadata)["message_id"] or message_id(world_key, path)


def attachment_header(paths: list[str]) -> str:
    """X-Attachments names files absolute from the drive's root (/Deal/Memo.docx), the form
    Archipelago's file tools take; metadata holds them as data-room paths (Deal/Memo.docx)."""
    return ", ".join("/" + p.lstrip("/") for p in paths)


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
        msg["X-Attachments"] = attachment_header(structured["attachments"])
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


def message_bytes(msg: EmailMessage, *, mangle_from: bool = False) -> bytes:
    """The message as written to a file: raw UTF-8 headers, never RFC 2047 encoded-words
    (unless its own text holds "=?"); RenderError when a word is too long for any mail line."""
    literal = any("=?" in str(value) for value in msg.values())
    for pol in (FILE_POLICY, *WIDER_POLICIES):
        out = io.BytesIO()
        BytesGenerator(out, mangle_from_=mangle_from, policy=pol).flatten(msg)
        data = out.getvalue()
        head = data.split(b"\n\n", 1)[0]
        if (literal or b"=?" not in head) and all(len(line) <= MAX_HEADER_LINE for line in head.split(b"\n")):
            return data
    raise RenderError(f"a header of the email (subject: {str(msg['Subject'])[:60]!r}) has a word too long for a mail "
                      f"line ({MAX_HEADER_LINE} bytes); break it with spaces.")


def render_eml(content: str, metadata: dict, *, path: str, world_key: str = "") -> bytes:
    """One email on its own. Without the rest of the world, a reply's In-Reply-To and
    References name the thread's root; the mbox (render_mbox) chains them exactly."""
    structured = parse_email(content, metadata)
    kept = parse_kept("email", metadata)
    root = str(metadata.get("thread") or "").strip()
    own = kept["message_id"] or message_id(world_key, path)
    thread_id = kept["thread_id"] or (message_id(world_key, root) if root and root != path else own)
    previous = [thread_id] if thread_id != own else []
    return message_bytes(build_message(structured, msg_id=own, thread_id=thread_id, previous=previous))


def email_message_ids(emails: list[WorldItem], *, world_key: str = "") -> dict[str, str]:
    """path → Message-ID of each email, refusing two emails with one Message-ID."""
    ids: dict[str, str] = {}
    owner: dict[str, str] = {}
    for item in emails:
        try:
            own = email_message_id(item.metadata, world_key=world_key, path=item.path)
        except RenderError as exc:
            raise RenderError(f"{item.path}: {exc.message}") from None
        if own in owner:
            raise RenderError(f"{item.path}: has the Message-ID {own} of {owner[own]}; a Message-ID names one email.")
        owner[own] = item.path
        ids[item.path] = own
    return ids


def render_mbox(emails: list[WorldItem], *, world_key: str = "") -> bytes:
    """All the world's email in one mbox, oldest first."""
    by_path = parse_items(emails, parse_email, "email")
    roots = thread_roots(by_path, "email")
    ids = email_message_ids(emails, world_key=world_key)
    ordered = sorted(by_path, key=lambda p: (by_path[p][2].astimezone(dt.UTC), p))
    earlier: dict[str, list[str]] = {}  # root → Message-IDs of the thread so far
    out = io.BytesIO()
    for path in ordered:
        item, structured, when = by_path[path]
        root = roots[path]
        thread = earlier.setdefault(root, [])
        # An imported thread keeps the X-Thread-ID it came with (its root may not be in the world).
        thread_id = parse_kept("email", item.metadata)["thread_id"] or ids[root]
        msg = build_message(structured, msg_id=ids[path], thread_id=thread_id, previous=list(thread))
        thread.append(ids[path])
        utc = when.astimezone(dt.UTC)
        out.write(f"From {structured['from']['email']} {utc:%a %b} {utc.day:2d} {utc:%H:%M:%S %Y}\n".encode())
        try:
            out.write(message_bytes(msg, mangle_from=True))
        except RenderError as exc:
            raise RenderError(f"{path}: {exc.message}") from None
        out.write(b"\n")
    return out.getvalue()
