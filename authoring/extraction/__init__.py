"""Uploaded files → a document's content, in the conventions of docs/content-format.md.

`detect_format(data, filename)` decides what a file is from its bytes (see detect.py);
`extract(data, format)` turns it into an `Extracted(kind, format, content, metadata,
notes)`. Everything is bounded: zips are checked before any library opens them, sheets,
rows, columns, slides and pages are capped, and the content stops at `max_chars` with a
note saying it was cut. Any failure is an ApplicationError with a message for the user.
"""

from authoring.extraction.common import (
    ACCEPTED,
    MAX_CONTENT_CHARS,
    OFFICE_ZIP_LIMITS,
    BudgetSpent,
    Extracted,
    Out,
    finish,
    refuse,
)
from authoring.extraction.detect import decode_text, detect_format
from core.archives import check_zip
from core.exceptions import ApplicationError

FORMATS = ("docx", "xlsx", "pptx", "pdf", "eml", "mbox", "ics", "csv", "md", "txt")
# Files that hold several items: an upload makes them emails (mail.read_mailbox) and
# calendar events (calendar.read_calendar). Elsewhere (a file in a world zip's drive)
# they are text files, like an .eml there.
CONTAINER_FORMATS = ("mbox", "ics")
# The data-room document each detected format becomes: (kind, DocumentFormat, extension).
DOCUMENT_TYPES = {
    "docx": ("file", "docx", "docx"),
    "xlsx": ("file", "xlsx", "xlsx"),
    "pptx": ("file", "pptx", "pptx"),
    "pdf": ("file", "pdf", "pdf"),
    "csv": ("file", "csv", "csv"),
    "md": ("file", "md", "md"),
    "txt": ("file", "md", "md"),  # plain text is valid Markdown; the original keeps .txt
    "eml": ("email", "", "eml"),
    "mbox": ("file", "md", "md"),  # as a file (see CONTAINER_FORMATS)
    "ics": ("file", "md", "md"),
}
_LABELS = {"docx": "Word document", "xlsx": "Excel workbook", "pptx": "PowerPoint deck", "pdf": "PDF", "eml": "email"}

__all__ = ["ACCEPTED", "CONTAINER_FORMATS", "DOCUMENT_TYPES", "FORMATS", "MAX_CONTENT_CHARS", "Extracted", "detect_format", "extract"]


def extract(data: bytes, format: str, *, max_chars: int = MAX_CONTENT_CHARS) -> Extracted:
    """The text of a file whose format `detect_format` decided."""
    from authoring.extraction import mail, office, pdf, text

    if format not in DOCUMENT_TYPES:
        raise refuse(f"Unknown upload format {format!r}.")
    kind, document_format, _ = DOCUMENT_TYPES[format]
    out = Out(max_chars)
    metadata: dict[str, str] = {}
    notes: list[str] = []
    try:
        if format in ("docx", "xlsx", "pptx"):
            check_zip(data, **OFFICE_ZIP_LIMITS)  # again: extract() may be called on its own
            {"docx": office.docx_to_markdown, "xlsx": office.xlsx_to_markdown, "pptx": office.pptx_to_markdown}[format](data, out)
        elif format == "pdf":
            pdf.pdf_to_markdown(data, out)
        elif format == "eml":
            metadata, notes = mail.eml_to_email(data, out)
        else:  # csv, md, txt, and an mbox or calendar read as a text file
            decoded, note = decode_text(data)
            notes += [note] if note else []
            (text.csv_text if format == "csv" else text.plain_text)(decoded, out)
    except BudgetSpent:
        pass
    except ApplicationError:
        raise
    except Exception as exc:  # any library's complaint about a malformed file
        label = _LABELS.get(format, f"{format} file")
        raise refuse(
            f"This {label} could not be read; it may be damaged ({type(exc).__name__}). Open and save it again, then upload it."
        ) from exc
    return finish(out, kind=kind, format=document_format, metadata=metadata, notes=notes)
