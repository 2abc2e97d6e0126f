from html.parser import HTMLParser

import pytest
from django.utils.safestring import SafeString

from authoring.rendering import preview_html
from tests.rendering.samples import CAP_TABLE, CHATS, DECK, EMAILS, EVENTS, MEMO


class _Elements(HTMLParser):
    """Every element and attribute the browser would build from the HTML."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, list]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


SCRIPT = "<script>alert('x')</script>"
EVIL = f'{SCRIPT}<img src=x onerror=alert(1)><a href="javascript:alert(1)">link</a>'


@pytest.mark.parametrize(("kind", "fmt", "content", "metadata"), [
    ("file", "md", f"# Title {EVIL}\n\nText {EVIL}\n", {}),
    ("file", "docx", f"{EVIL}\n\n| a | b |\n|---|---|\n| {SCRIPT} | x |\n", {}),
    ("file", "pdf", f"- {EVIL}\n", {}),
    ("file", "xlsx", f"## Sheet: S\n|   | A | B |\n|---|---|---|\n| 1 | {SCRIPT} | =\"<script>\" |\n", {}),
    ("file", "pptx", f"# {SCRIPT}\n\n## {SCRIPT}\n\n- {EVIL}\n\nNotes: {EVIL}\n", {}),
    ("file", "csv", f'a,b\n"{SCRIPT}",x\n', {}),
    ("email", "", f"Hello {EVIL}", {**EMAILS[0].metadata, "subject": SCRIPT, "from": f'"{SCRIPT}" <a@b.com>'}),
    ("chat", "", f"hi {EVIL}", {**CHATS[0].metadata, "channel": SCRIPT}),
    ("event", "", f"Agenda {EVIL}", {**EVENTS[0].metadata, "location": SCRIPT}),
    ("event", "", f"Invalid {SCRIPT}", {}),  # the error preview shows the content, escaped
    ("file", "xlsx", f"{SCRIPT}\n", {}),
])
def test_no_script_survives_a_preview(kind, fmt, content, metadata):
    html = preview_html(kind, fmt, content, metadata)
    assert isinstance(html, SafeString)
    elements = _Elements(html).tags
    assert elements, "the preview shows something"
    assert not [tag for tag, _ in elements if tag in ("script", "img", "iframe", "style")]
    attributes = [(name, value or "") for _, attrs in elements for name, value in attrs]
    assert not [a for a in attributes if a[0].startswith("on") or a[1].strip().lower().startswith("javascript:")]
    assert "alert(" not in "".join(value for _, value in attributes)


def test_spreadsheet_preview_shows_computed_values_with_their_formats():
    html = preview_html("file", "xlsx", CAP_TABLE, {})
    assert "<h3>Cap table</h3>" in html and "<h3>Valuation</h3>" in html
    assert "<code>=SUM(B2:B3)</code> → 10,000,000" in html
    assert "<code>=B2/B4</code> → 60.0%" in html
    assert "6,000,000" in html
    assert "2026-05-16" in html  # =B5+90 shown through its yyyy-mm-dd format


def test_deck_preview_is_slide_cards_with_notes():
    html = preview_html("file", "pptx", DECK, {})
    assert "<h2>Project Falcon — Board update</h2>" in html
    assert "<h3>Slide 1: Deal status</h3>" in html
    assert "<strong>5 January</strong>" in html
    assert "Mention the retention package." in html


def test_email_and_event_previews_show_headers_and_times():
    mail = preview_html("email", "", EMAILS[0].content, EMAILS[0].metadata)
    assert "<dt>From</dt><dd>Jane Doe &lt;jane@acme.com&gt;</dd>" in mail
    assert "Mon 05 Jan 2026, 09:00 (UTC+0100)" in mail
    assert "Deal/LOI.docx" in mail
    event = preview_html("event", "", EVENTS[0].content, EVENTS[0].metadata)
    assert "Mon 12 Jan 2026, 15:00 (UTC+0100)" in event and "16:30" in event
    assert "<strong>Go / no-go</strong>" in event


def test_markdown_preview_and_invalid_content_explained():
    assert "<h1>Project Falcon — Investment Committee Memo</h1>" in preview_html("file", "docx", MEMO, {})
    broken = preview_html("file", "xlsx", "## Sheet: S\n|   | A |\n|---|---|\n| 1 | =A7 |\n", {})
    assert "cannot be rendered" in broken and "outside the sheet" in broken


def test_an_all_day_and_repeating_event_shows_as_one():
    """An all-day event showed as "00:00 → 00:00 the next day (UTC)", and a weekly one said
    nothing of repeating."""
    from authoring.rendering import preview_html

    html = str(preview_html("event", "", "Closing.", {
        "subject": "Closing", "start": "2025-06-30T00:00:00+00:00", "end": "2025-07-01T00:00:00+00:00", "all_day": "true"}))
    assert "<dt>When</dt><dd>Mon 30 Jun 2025, all day</dd>" in html and "00:00" not in html
    html = str(preview_html("event", "", "", {
        "subject": "DD call", "start": "2025-06-02T09:00:00+00:00", "end": "2025-06-02T10:00:00+00:00", "rrule": "FREQ=WEEKLY;COUNT=3"}))
    assert "<dt>Repeats</dt><dd>weekly, 3 times</dd>" in html and "<dt>Starts</dt>" in html
