"""eml → an email document: from/to/cc/bcc/date/subject in metadata, the plain-text body
as content. An HTML-only body is reduced to its text (tags dropped, script and style
content dropped, entities decoded); it is never kept as HTML.

`read_message` gives the whole of one message for an upload (MailPiece): also its ids
(Message-ID, thread) and its attachments, which the upload service keeps as files of
the data room linked from the mail; `read_mailbox` splits an mbox into its messages.
"""

import datetime as dt
import mailbox
import re
import tempfile
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from html.parser import HTMLParser

from authoring.extraction.common import MAX_CONTENT_CHARS, BudgetSpent, Left, Out, finish, one_line, refuse
from authoring.rendering.headers import MAIL_ID

HEADER_KEYS = ("from", "to", "cc", "bcc", "subject")
MAX_HEADER_CHARS = 2_000


def eml_to_email(data: bytes, out: Out) -> tuple[dict[str, str], list[str]]:
    """Write the body to `out`; return (metadata, notes)."""
    message: EmailMessage = BytesParser(policy=policy.default).parsebytes(data)
    metadata: dict[str, str] = {}
    notes: list[str] = []
    for key in HEADER_KEYS:
        value = _header(message, key)
        if value:
            metadata[key] = value
    date = _date(message)
    if date is not None:
        metadata["date"] = date.isoformat()
    elif message.get("date") is not None:
        notes.append(f"The Date header {_header(message, 'date')!r} could not be read and was left out.")
    body = message.get_body(preferencelist=("plain", "html"))
    if body is None:
        notes.append("The email has no text body.")
    else:
        text = _content(body)
        if body.get_content_subtype() == "html":
            text = html_to_text(text)
            notes.append("The email had only an HTML body; it was converted to plain text.")
        out.add(text.strip())
    attachments = [one_line(part.get_filename() or "unnamed", 200) for part in message.iter_attachments()]
    if attachments:
        notes.append(f"Attachments not imported (upload them separately): {', '.join(attachments)[:300]}.")
    return metadata, notes


def _header(message: EmailMessage, key: str) -> str:
    try:
        value = message.get(key)
    except Exception:  # a header the parser cannot make sense of
        return ""
    return one_line(str(value), MAX_HEADER_CHARS) if value is not None else ""


def _date(message: EmailMessage) -> dt.datetime | None:
    try:
        value = message.get("date")
        date = getattr(value, "datetime", None)
    except Exception:
        return None
    if date is None:
        return None
    # "-0000" means "zone unknown" (RFC 5322); keep the time, call it UTC.
    return date if date.tzinfo is not None else date.replace(tzinfo=dt.UTC)


def _content(part: EmailMessage) -> str:
    try:
        return part.get_content()
    except (LookupError, UnicodeError, AssertionError, ValueError):  # unknown or lying charset
        payload = part.get_payload(decode=True) or b""
        return payload.decode("utf-8", "replace")


class _TextOfHTML(HTMLParser):
    BLOCKS = {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "blockquote", "hr", "pre"}
    SKIP = {"script", "style", "head", "title", "template", "noscript"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")
            if tag == "li":
                self.parts.append("- ")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextOfHTML()
    parser.feed(html)
    parser.close()
    lines = [" ".join(line.split()) for line in "".join(parser.parts).split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


# --- a whole message, for an upload ---------------------------------------------------------

MAX_MESSAGES = 2_000
MAX_ATTACHMENTS_PER_MESSAGE = 100
_MESSAGE_ID = re.compile(r"<[^<>\s]+>")


@dataclass
class Attachment:
    name: str  # as the message names it ("" when it does not)
    data: bytes
    content_type: str


@dataclass
class MailPiece:
    """One message: what becomes its email document, and its attachments."""

    id: str  # its Message-ID, "" when it has none (or one no mail reader would take)
    thread_id: str  # its X-Thread-ID as written, ""
    thread_ref: str  # the id of its thread's first message: X-Thread-ID, else References' first, else In-Reply-To
    subject: str
    when: dt.datetime | None
    content: str
    metadata: dict
    original: bytes
    notes: list[str] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    left: list[Left] = field(default_factory=list)


def read_message(raw: bytes, *, max_chars: int = MAX_CONTENT_CHARS) -> MailPiece:
    from authoring.archipelago.apps import email_headers  # the world import's reading of headers

    message: EmailMessage = BytesParser(policy=policy.default).parsebytes(raw)
    found, when = email_headers(message)
    metadata = {key: value for key, value in found.items() if value}
    notes: list[str] = []
    if when is None and message.get("date") is not None:
        notes.append(f"The Date header {_header(message, 'date')!r} could not be read and was left out.")
    out = Out(max_chars)
    try:
        body = message.get_body(preferencelist=("plain", "html"))
        if body is None:
            notes.append("The email has no text body.")
        else:
            text = _content(body)
            if body.get_content_subtype() == "html":
                text = html_to_text(text)
                notes.append("The email had only an HTML body; it was converted to plain text.")
            out.add(text.strip())
    except BudgetSpent:
        pass
    extracted = finish(out, kind="email", format="", notes=notes)
    own = _first_id(_header(message, "message-id"))
    thread_id = _first_id(_header(message, "x-thread-id"))
    references = _MESSAGE_ID.findall(_header(message, "references")) or _MESSAGE_ID.findall(_header(message, "in-reply-to"))
    subject = metadata.get("subject", "")
    piece = MailPiece(
        id=own, thread_id=thread_id, thread_ref=thread_id or (references[0] if references else ""), subject=subject,
        when=when, content=extracted.content, metadata=metadata, original=raw, notes=list(extracted.notes),
    )
    _attachments(message, piece)
    return piece


def _first_id(text: str) -> str:
    found = _MESSAGE_ID.findall(text or "")
    return found[0] if found and MAIL_ID.match(found[0]) else ""


def _attachments(message: EmailMessage, piece: MailPiece) -> None:
    subject = f"“{piece.subject}”" if piece.subject else "without a subject"
    parts = list(message.iter_attachments())
    for n, part in enumerate(parts, start=1):
        name = one_line(part.get_filename() or "", 200)
        content_type = part.get_content_type()
        if n > MAX_ATTACHMENTS_PER_MESSAGE:
            piece.left.append(Left(f"{len(parts) - MAX_ATTACHMENTS_PER_MESSAGE} more attachments of the email {subject}",
                                   f"an email keeps at most {MAX_ATTACHMENTS_PER_MESSAGE} attachments."))
            break
        try:
            if content_type == "message/rfc822":  # a forwarded email: kept as the .eml file it is
                inner = part.get_content()
                data = inner.as_bytes() if isinstance(inner, EmailMessage) else b""
                if not name and isinstance(inner, EmailMessage):
                    subject = re.sub(r'[<>:"|?*/\\]', "", one_line(str(inner.get("subject") or ""), 120))
                    name = f"{' '.join(subject.split()) or 'Attached email'}.eml"
            else:
                data = part.get_payload(decode=True) or b""
        except Exception as exc:  # a part whose encoding is broken
            piece.left.append(Left(f"The attachment {name or f'number {n}'} of the email {subject}",
                                   f"it cannot be decoded ({type(exc).__name__})."))
            continue
        if not data:
            piece.left.append(Left(f"The attachment {name or f'number {n}'} of the email {subject}", "it is empty."))
            continue
        piece.attachments.append(Attachment(name=name, data=data, content_type=content_type))


def read_mailbox(data: bytes) -> list[bytes]:
    """The messages of an mbox, in file order, each as its bytes (without the "From " line)."""
    with tempfile.NamedTemporaryFile(suffix=".mbox") as spool:
        spool.write(data)
        spool.flush()
        box = mailbox.mbox(spool.name, create=False)
        try:
            keys = list(box.iterkeys())
            if len(keys) > MAX_MESSAGES:
                raise refuse(f"This mailbox holds {len(keys):,} messages; upload at most {MAX_MESSAGES:,} at a time.")
            return [box.get_bytes(key) for key in keys]
        except ValueError as exc:
            raise refuse(f"This mailbox could not be read ({exc}).") from None
        finally:
            box.close()
