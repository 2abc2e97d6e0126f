"""csv → the CSV text itself; md / txt → the text as Markdown."""

import csv
import io

from authoring.extraction.common import Out, clean_text


def csv_text(text: str, out: Out) -> None:
    """The CSV as uploaded. When it is over the budget it is cut at a record boundary
    (re-written by the csv module so no quoted field is split) and a last one-field
    record says so, which keeps the content valid CSV."""
    text = clean_text(text)
    if len(text) <= out.limit:
        out.parts.append(text)
        out.size = len(text)
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    note = f"[Truncated: the file is longer than {out.limit:,} characters; the rest is only in the uploaded original.]"
    kept = 0
    for row in csv.reader(io.StringIO(text, newline="")):
        before = buffer.tell()
        writer.writerow(row)
        if buffer.tell() + len(note) + 4 > out.limit:
            buffer.seek(before)
            buffer.truncate()
            break
        kept += 1
    writer.writerow([note])
    out.parts.append(buffer.getvalue())
    out.size = buffer.tell()
    out.notes.append(f"Only the first {kept:,} CSV records were imported; the rest are in the original.")


def plain_text(text: str, out: Out) -> None:
    out.add(text)
