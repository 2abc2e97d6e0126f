"""eml → an email document: from/to/cc/bcc/date/subject in metadata, the plain-text body
as content. An HTML-only body is reduced to its text (tags dropped, script and style
content dropped, entities decoded); it is never kept as HTML."""

import datetime as dt
import re
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from html.parser import HTMLParser

from authoring.extraction.common import Out, one_line

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
