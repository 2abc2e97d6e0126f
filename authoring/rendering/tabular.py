"""csv content (RFC 4180 text) ↔ {"rows": [[cell, ...], ...]}."""

import csv
import io

from .base import RenderError


def parse_csv(content: str) -> dict:
    reader = csv.reader(io.StringIO(content or "", newline=""), strict=True)
    rows: list[list[str]] = []
    try:
        for row in reader:
            if row:  # a blank line is not a row
                rows.append(row)
    except csv.Error as exc:
        raise RenderError(f"line {reader.line_num}: not valid CSV ({exc}); a field holding a quote, comma or line break "
                          'must be wrapped in double quotes, with inner quotes doubled ("").') from None
    return {"rows": rows}


def _write(rows: list[list[str]], lineterminator: str) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=lineterminator)
    for row in rows:
        writer.writerow(["" if c is None else str(c) for c in row])
    return out.getvalue()


def csv_to_content(structured: dict) -> str:
    rows = structured.get("rows") if isinstance(structured, dict) else None
    if not isinstance(rows, list):
        raise RenderError("Expected {'rows': [[cell, ...], ...]} for a csv document.")
    return _write([r for r in rows if r], "\n")


def render_csv(content: str) -> bytes:
    """The file as RFC 4180 says: CRLF line ends, UTF-8."""
    return _write(parse_csv(content)["rows"], "\r\n").encode()
