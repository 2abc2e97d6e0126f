"""What every extractor shares: the result type, the limits, and a bounded writer that
stops an extractor as soon as the content budget is spent (so a huge file costs at most
the budget, not its full text in memory first)."""

import re
from dataclasses import dataclass, field

from core.exceptions import ApplicationError

MAX_CONTENT_CHARS = 500_000  # the services' cap on Document.content
MIB = 1024 * 1024
# Office files are zips that python-docx / python-pptx load whole into memory: the
# uncompressed total bounds that memory. Real documents are far below these.
OFFICE_ZIP_LIMITS = {"max_entries": 1_000, "max_total_bytes": 100 * MIB, "max_entry_bytes": 50 * MIB, "max_ratio": 100}
MAX_SHEETS = 50
MAX_SHEET_ROWS = 2_000
MAX_SHEET_COLUMNS = 50  # A … AX
MAX_SLIDES = 500
MAX_PDF_PAGES = 300
MAX_CELL_CHARS = 2_000

ACCEPTED = (
    "Word (.docx), Excel (.xlsx), PowerPoint (.pptx), PDF, email (.eml), mailbox (.mbox), calendar (.ics), CSV, "
    "Markdown or plain text"
)

# Tab and newline stay; every other control character goes (NUL cannot even be stored).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Extracted:
    """The text of an uploaded file in the docs/content-format.md conventions."""

    kind: str  # DocumentKind value: "file" or "email"
    format: str  # DocumentFormat value; "" for an email
    content: str
    metadata: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the expert should know: truncation, re-encoding …


@dataclass(frozen=True)
class Left:
    """Something of an uploaded file that was not kept, and why, in plain words: an
    attachment of a type Taskwright does not read, an event without a start, the end of
    a description longer than calendars take."""

    item: str
    reason: str


def refuse(message: str) -> ApplicationError:
    return ApplicationError(f"{message} Accepted: {ACCEPTED}.")


def clean_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\v", "\n")
    text = _CONTROL.sub("", text)
    # Lone surrogates (from broken PDFs or UTF-16 pairs split by a library) cannot be stored.
    return text.encode("utf-8", "replace").decode("utf-8")


def one_line(text: str, limit: int = MAX_CELL_CHARS) -> str:
    text = " ".join(clean_text(str(text)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def md_table(rows: list[list[str]]) -> str:
    """A GFM pipe table; the first row is the header."""
    width = max((len(row) for row in rows), default=0)
    if not width:
        return ""
    lines = []
    for i, row in enumerate(rows):
        cells = [one_line(cell).replace("|", "\\|") for cell in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + "---|" * width)
    return "\n".join(lines)


class BudgetSpent(Exception):
    """Raised by Out.add once the content budget is exceeded; extract() catches it."""


class Out:
    """Collects markdown blocks; consecutive `tight` blocks (list items) share no blank
    line. Stops the extractor (BudgetSpent) once `limit` characters are exceeded."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.truncated = False
        self.notes: list[str] = []
        self._last_tight = False

    def add(self, text: str, *, tight: bool = False) -> None:
        text = clean_text(text).strip("\n")
        if not text.strip():
            return
        if self.parts:
            self.parts.append("\n" if tight and self._last_tight else "\n\n")
        self.parts.append(text)
        self._last_tight = tight
        self.size += len(text) + 2
        if self.size > self.limit:
            self.truncated = True
            raise BudgetSpent

    def note(self, text: str, *, in_content: bool = True) -> None:
        """Something cut or changed: told in the version note, and (by default) as a
        last paragraph of the content so readers (and agents) see it too."""
        self.notes.append(text)
        if in_content:
            separator = "\n\n" if self.parts else ""
            self.parts.append(f"{separator}[{text}]")
            self.size += len(text) + 4

    def text(self) -> str:
        return "".join(self.parts)


def finish(out: Out, *, kind: str, format: str, metadata: dict | None = None, notes: list[str] | None = None) -> Extracted:
    """Join the blocks, cut to the budget at a line boundary and say so."""
    content = out.text()
    all_notes = [*(notes or []), *out.notes]
    if out.truncated or len(content) > out.limit:
        message = (
            f"Truncated: the file's text is longer than {out.limit:,} characters; "
            "the rest is only in the uploaded original."
        )
        keep = out.limit - len(message) - 4
        content = content[:keep]
        if "\n" in content:
            content = content[: content.rindex("\n")]
        content = f"{content.rstrip()}\n\n[{message}]"
        all_notes.append(message)
    content = content.strip("\n") + "\n" if content.strip() else ""
    return Extracted(kind=kind, format=format, content=content, metadata=metadata or {}, notes=tuple(all_notes))
