"""Sanitized HTML previews of documents for the browser.

Every piece of user or model text is either escaped here or rendered by
core.sanitize.document_markdown_to_safe_html; the assembled HTML goes through clean_html once
more before it is marked safe, so nothing unescaped reaches a template.
"""

import datetime as dt
import re

from django.utils.html import escape, linebreaks
from django.utils.safestring import SafeString, mark_safe

from core.sanitize import clean_html, document_markdown_to_safe_html

from .base import RenderError, require_kind_format
from .events import repeats_in_words
from .headers import format_address, format_addresses, parse_chat, parse_email, parse_event, parse_kept, parse_when
from .markdown import plain_text
from .sheets import col_letter, parse_sheets
from .slides import parse_slides
from .tabular import parse_csv
from .workbook import Workbook


def _md(text: str) -> str:
    return str(document_markdown_to_safe_html(text))


def _dl(rows: list[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows if v) + "</dl>"


def _when(value: str) -> str:
    return parse_when(value, "date").strftime("%a %d %b %Y, %H:%M (UTC%z)")


# --- numbers as a spreadsheet shows them -------------------------------------------------------

def format_value(value: object, number_format: str | None) -> str:
    """A cell value as its number format shows it (the common formats; others as General)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M" if value.time() != dt.time() else "%Y-%m-%d")
    if not isinstance(value, int | float):
        return str(value)
    fmt = (number_format or "General").split(";")[0]
    bare = re.sub(r'"[^"]*"|\\.|\[[^\]]*\]', "", fmt)
    if re.search(r"[dy]", bare, re.IGNORECASE) and not re.search(r"[#0]", bare):
        day = dt.datetime(1899, 12, 30) + dt.timedelta(days=float(value))
        return day.strftime("%Y-%m-%d %H:%M" if re.search(r"h", bare, re.IGNORECASE) else "%Y-%m-%d")
    if fmt == "General" or not re.search(r"[#0]", bare):
        return (
            f"{value:,}"
            if isinstance(value, int) and abs(value) >= 10000
            else (f"{value:.10g}" if isinstance(value, float) else str(value))
        )
    decimals = len(re.search(r"\.(0*)", bare).group(1)) if re.search(r"\.(0*)", bare) else 0
    percent = "%" in bare
    number = value * 100 if percent else value
    text = f"{abs(number):{',' if ',' in bare else ''}.{decimals}f}"
    prefix = re.sub(r'["\\]|\[[^\]]*\]', "", re.split(r"[#0]", fmt, maxsplit=1)[0])
    return f"{'-' if number < 0 else ''}{prefix}{text}{'%' if percent else ''}"


# --- per kind ----------------------------------------------------------------------------------

def _xlsx(content: str) -> str:
    structured, where = parse_sheets(content)
    book = Workbook(structured, where)
    parts = []
    for sheet in book.sheets:
        parts.append(f"<h3>{escape(sheet.name)}</h3>")
        if not sheet.max_row:
            parts.append("<p><em>Empty sheet.</em></p>")
            continue
        head = "".join(f"<th>{col_letter(c)}</th>" for c in range(1, sheet.max_col + 1))
        body = []
        for r in range(1, sheet.max_row + 1):
            cells = []
            for c in range(1, sheet.max_col + 1):
                cell = sheet.cells.get((r, c))
                if cell is None:
                    cells.append("<td></td>")
                    continue
                shown = escape(format_value(cell.value, cell.number_format))
                if cell.formula is not None:
                    shown = f"<code>{escape(cell.formula)}</code> → {shown}"
                align = ' align="right"' if isinstance(cell.value, int | float) and not isinstance(cell.value, bool) else ""
                cells.append(f"<td{align}>{shown}</td>")
            body.append(f"<tr><th>{r}</th>{''.join(cells)}</tr>")
        parts.append(f"<table><thead><tr><td></td>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")  # (the corner: no header)
    return "".join(parts)


def _pptx(content: str) -> str:
    deck = parse_slides(content)
    parts = [f"<h2>{escape(deck['title'])}</h2>"] if deck["title"] else []
    for n, slide in enumerate(deck["slides"], 1):
        bullets = "\n".join(f"- {b}" for b in slide["bullets"])
        html = f"<div><h3>Slide {n}: {escape(plain_text(slide['title']))}</h3>{_md(bullets)}"
        if slide["notes"]:
            html += f"<blockquote><p><strong>Notes</strong></p>{_md(slide['notes'])}</blockquote>"
        parts.append(html + "</div><hr>")
    return "".join(parts)


def _csv(content: str) -> str:
    rows = parse_csv(content)["rows"]
    if not rows:
        return "<p><em>Empty file.</em></p>"
    head = "".join(f"<th>{escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _email(content: str, metadata: dict) -> str:
    s = parse_email(content, metadata)
    headers = _dl([("From", format_address(s["from"])), ("To", format_addresses(s["to"])), ("Cc", format_addresses(s["cc"])),
                   ("Bcc", format_addresses(s["bcc"])), ("Date", _when(s["date"])), ("Subject", s["subject"]),
                   ("Attachments", ", ".join(s["attachments"]))])
    return headers + "<hr>" + linebreaks(s["body"], autoescape=True)


def _chat(content: str, metadata: dict) -> str:
    s = parse_chat(content, metadata)
    return (f"<p><strong>{escape(s['from']['name'] or s['from']['email'])}</strong> in #{escape(s['channel'])} · "
            f"{escape(_when(s['date']))}</p>" + linebreaks(s["text"], autoescape=True))


def _event(content: str, metadata: dict) -> str:
    s = parse_event(content, metadata)
    kept = parse_kept("event", metadata)
    if kept["all_day"]:  # (the end is the day after the last, as iCalendar counts it)
        first, end = parse_when(s["start"], "start").date(), parse_when(s["end"], "end").date()
        last = end - dt.timedelta(days=1) if end > first else first
        when = [("When", f"{first:%a %d %b %Y}, all day" if last == first else f"{first:%a %d %b %Y} to {last:%a %d %b %Y}, all day")]
    else:
        when = [("Starts", _when(s["start"])), ("Ends", _when(s["end"]))]
    return _dl([("Event", s["subject"]), *when, ("Repeats", repeats_in_words(kept["rrule"]) if kept["rrule"] else ""),
                ("Location", s["location"]), ("Attendees", format_addresses(s["attendees"]))]) + _md(s["description"])


def preview_html(kind: str, format: str, content: str, metadata: dict | None = None) -> SafeString:
    """The document as sanitized HTML. Content that cannot be rendered shows the reason
    and the text as written, instead of failing the page."""
    metadata = metadata or {}
    try:
        key = require_kind_format(kind, format)
        if key in ("docx", "md", "pdf"):
            html = _md(content)
        elif key == "xlsx":
            html = _xlsx(content)
        elif key == "pptx":
            html = _pptx(content)
        elif key == "csv":
            html = _csv(content)
        else:
            html = {"email": _email, "chat": _chat, "event": _event}[key](content, metadata)
    except RenderError as exc:
        html = (f"<p><strong>This document cannot be rendered:</strong> {escape(exc.message)}</p>"
                f"<pre>{escape(content or '')}</pre>")
    return mark_safe(clean_html(html))  # noqa: S308 - every piece above is escaped or sanitized, and cleaned again here
