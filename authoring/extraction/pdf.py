"""pdf → the text of each page under a `## Page n` heading (pypdf). pypdf caps every
decompressed stream itself (75 MB by default), and the page count is capped here."""

import io

from authoring.extraction.common import MAX_PDF_PAGES, Out, refuse


def pdf_to_markdown(data: bytes, out: Out) -> None:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")  # many PDFs are "encrypted" with an empty password
        except Exception:  # e.g. AES without the optional crypto dependency
            opened = 0
        if not opened:
            raise refuse("This PDF is password-protected; upload it without a password.")
    pages = reader.pages
    count = len(pages)
    found_text = False
    for index in range(min(count, MAX_PDF_PAGES)):
        text = (pages[index].extract_text() or "").strip()
        found_text = found_text or bool(text)
        out.add(f"## Page {index + 1}")
        out.add(text or "(No text on this page.)")
    if count > MAX_PDF_PAGES:
        out.note(f"Only the first {MAX_PDF_PAGES} of {count} pages were imported; the rest are in the original.")
    if not found_text:
        out.note("This PDF has no text layer (it may be a scanned image); only the original file is kept.")
