"""xlsx content ↔ its structured form, and the typing of cell text.

Content (docs/content-format.md): one `## Sheet: <name>` heading per sheet, a GFM pipe
table whose header row is the column letters (first header cell empty) and whose first
column is the row number; an optional `Formats: B2:B9 #,##0.00; C2 0%` line after it.

Structured form: {"sheets": [{"name", "rows": [[cell text, ...], ...], "formats":
[{"range", "number_format"}]}]} where rows[0] is spreadsheet row 1 and rows[i][0] is
column A. Cell text is kept as written: `=…` is a formula, `6000000`, `12.5%`, `$1,200`,
`TRUE`, `2026-01-05` are typed when the workbook is built (see typed_value).
"""

import datetime as dt
import re
from dataclasses import dataclass, field

from openpyxl.utils.cell import column_index_from_string, coordinate_from_string, get_column_letter
from openpyxl.utils.exceptions import CellCoordinatesException

from .base import RenderError
from .markdown import parser, table_cells

SHEET_HEADING = re.compile(r"^Sheet:\s*(.*)$", re.IGNORECASE)
FORMATS_LINE = re.compile(r"^\s*Formats?:\s*(.*)$", re.IGNORECASE)
CELL = r"\$?[A-Z]{1,3}\$?[1-9]\d*"
RANGE = re.compile(rf"^({CELL})(?::({CELL}))?$")
FORMAT_ENTRY = re.compile(rf"(?:^|;)\s*({CELL}(?::{CELL})?)\s+")
BAD_SHEET_CHARS = re.compile(r"[\[\]:*?/\\]")
MAX_ROWS, MAX_COLS = 1_048_576, 16_384
# A sheet typed as text, drafted or edited in a textarea, never needs more; the cap keeps a
# stray "| 900000 |" row number from making the grid (and the workbook) enormous.
MAX_SHEET_ROWS = 100_000


def col_letter(index: int) -> str:
    """1 → A, 27 → AA."""
    return get_column_letter(index)


def col_index(letters: str) -> int:
    """A → 1, AA → 27."""
    return column_index_from_string(letters.upper())


def split_ref(ref: str) -> tuple[int, int]:
    """'$B$12' → (12, 2): row and column, 1-based."""
    try:
        letters, row = coordinate_from_string(ref.upper())
    except CellCoordinatesException:
        raise ValueError(ref) from None
    return row, column_index_from_string(letters)


def range_cells(spec: str) -> tuple[int, int, int, int]:
    """'B2:C4' → (first row, first col, last row, last col)."""
    m = RANGE.match(spec.strip().upper())
    if not m:
        raise ValueError(spec)
    r1, c1 = split_ref(m.group(1))
    r2, c2 = split_ref(m.group(2) or m.group(1))
    return min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)


# --- parsing -------------------------------------------------------------------------------

@dataclass
class _Sheet:
    name: str
    line: int
    rows: list = field(default_factory=list)
    formats: list = field(default_factory=list)
    format_lines: list = field(default_factory=list)
    has_table: bool = False
    cell_lines: dict = field(default_factory=dict)  # (row, col) → content line, for messages


def _raw_cell_count(line: str) -> int:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return len(re.split(r"(?<!\\)\|", body))


def check_sheet_name(name: str, line: int, seen: set[str]) -> None:
    where = f"line {line}: sheet name {name!r}"
    if not name:
        raise RenderError(f"line {line}: '## Sheet:' needs a name, e.g. '## Sheet: Cap table'.")
    if len(name) > 31:
        raise RenderError(f"{where} is longer than Excel's 31 characters.")
    if BAD_SHEET_CHARS.search(name):
        raise RenderError(f"{where} contains one of [ ] : * ? / \\, which Excel does not allow.")
    if name.lower() in seen:
        raise RenderError(f"{where} is used twice (Excel compares sheet names without case).")
    seen.add(name.lower())


def _read_table(sheet: _Sheet, tokens, start: int, end: int, lines: list[str]) -> None:
    first_line = tokens[start].map[0] + 1
    header, body = table_cells(tokens, start + 1, end)
    letters = [h.strip().upper() for h in header[1:]]
    expected = [col_letter(i) for i in range(1, len(letters) + 1)]
    if not letters or letters != expected:
        raise RenderError(f"line {first_line}: the header row of sheet {sheet.name!r} must be an empty cell then the column "
                          f"letters {' | '.join(expected or ['A', 'B', 'C'])}; found {header}.")
    width = len(letters)
    row_tokens = [t for t in tokens[start:end] if t.type == "tr_open"][1:]
    last_row = 0
    grid: dict[int, list[str]] = {}
    for cells, tok in zip(body, row_tokens, strict=True):
        line_no = tok.map[0] + 1
        raw_count = _raw_cell_count(lines[line_no - 1])
        if raw_count > width + 1:
            columns = f"{width} column{'s' if width > 1 else ''} ({expected[0]}{'–' + expected[-1] if width > 1 else ''})"
            raise RenderError(f"line {line_no}: this row of sheet {sheet.name!r} has {raw_count - 1} cells after the row "
                              f"number but the header names only {columns}.")
        number = cells[0].strip()
        if not number.isdigit() or int(number) < 1:
            raise RenderError(f"line {line_no}: the first cell of each row of sheet {sheet.name!r} must be the row number "
                              f"(1, 2, 3 …); found {number!r}.")
        row = int(number)
        if row > MAX_SHEET_ROWS:
            raise RenderError(
                f"line {line_no}: row {row} of sheet {sheet.name!r} is beyond the {MAX_SHEET_ROWS:,} rows a sheet may have here."
            )
        if row <= last_row:
            raise RenderError(f"line {line_no}: row {row} of sheet {sheet.name!r} comes after row {last_row}; "
                              "rows must be in increasing order, each once.")
        last_row = row
        grid[row] = [c.strip() for c in cells[1:]]
        for col in range(1, width + 1):
            sheet.cell_lines[(row, col)] = line_no
    sheet.rows = [grid.get(r, [""] * width) for r in range(1, last_row + 1)]
    sheet.has_table = True


def _read_formats(sheet: _Sheet, spec: str, line_no: int) -> None:
    starts = list(FORMAT_ENTRY.finditer(spec))
    if not starts or starts[0].start() != 0:
        raise RenderError(f"line {line_no}: a Formats line lists 'RANGE FORMAT' pairs separated by '; ', "
                          f"e.g. 'Formats: B2:B9 #,##0.00; C2 0%'; could not read {spec!r}.")
    for n, m in enumerate(starts):
        end = starts[n + 1].start() if n + 1 < len(starts) else len(spec)
        number_format = spec[m.end():end].strip()
        if not number_format:
            raise RenderError(f"line {line_no}: range {m.group(1)} in the Formats line has no number format after it.")
        sheet.formats.append({"range": m.group(1).replace("$", ""), "number_format": number_format})
        sheet.format_lines.append(line_no)


@dataclass(frozen=True)
class SheetLines:
    """Where things were written in the content, so errors found later name the line."""

    sheets: dict  # sheet index → heading line
    cells: dict  # (sheet index, row, col) → line
    formats: dict  # (sheet index, format index) → line

    def cell(self, sheet: int, row: int, col: int) -> str:
        line = self.cells.get((sheet, row, col))
        return f"line {line}: " if line else ""


def parse_sheets(content: str) -> tuple[dict, SheetLines]:
    lines = (content or "").split("\n")
    formats_lines: list[tuple[int, str]] = []
    for n, line in enumerate(lines):
        m = FORMATS_LINE.match(line)
        if m:
            formats_lines.append((n + 1, m.group(1)))
            lines[n] = ""  # a Formats line right under a table would otherwise read as a table row
    tokens = parser().parse("\n".join(lines))
    sheets: list[_Sheet] = []
    seen: set[str] = set()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        line_no = tok.map[0] + 1 if tok.map else 0
        if tok.type == "heading_open":
            title = tokens[i + 1].content.strip()
            m = SHEET_HEADING.match(title)
            if tok.tag != "h2" or not m:
                raise RenderError(f"line {line_no}: expected a '## Sheet: <name>' heading; found {tok.markup} {title!r}.")
            check_sheet_name(m.group(1).strip(), line_no, seen)
            sheets.append(_Sheet(name=m.group(1).strip(), line=line_no))
            i += 3
            continue
        if (tok.level == 0 and tok.type.endswith("_open")) or tok.type in ("fence", "code_block", "hr"):
            end = i
            if tok.type.endswith("_open"):
                end = next(
                    j
                    for j in range(i + 1, len(tokens))
                    if tokens[j].level == tok.level and tokens[j].type == tok.type.replace("_open", "_close")
                )
            if not sheets:
                raise RenderError(f"line {line_no}: text before the first '## Sheet: <name>' heading; every table belongs to a sheet.")
            if tok.type != "table_open":
                raise RenderError(f"line {line_no}: under '## Sheet: {sheets[-1].name}' expected a pipe table "
                                  "(header row: empty cell then column letters; first column: row numbers).")
            if sheets[-1].has_table:
                raise RenderError(f"line {line_no}: sheet {sheets[-1].name!r} already has a table; one table per sheet.")
            _read_table(sheets[-1], tokens, i, end, lines)
            i = end
        i += 1
    for line_no, spec in formats_lines:
        owner = [s for s in sheets if s.line < line_no]
        if not owner:
            raise RenderError(f"line {line_no}: a Formats line must follow a sheet's table.")
        _read_formats(owner[-1], spec, line_no)
    structured = {"sheets": [{"name": s.name, "rows": s.rows, "formats": s.formats} for s in sheets]}
    where = SheetLines(
        sheets={n: s.line for n, s in enumerate(sheets)},
        cells={(n, r, c): line for n, s in enumerate(sheets) for (r, c), line in s.cell_lines.items()},
        formats={(n, k): line for n, s in enumerate(sheets) for k, line in enumerate(s.format_lines)},
    )
    return structured, where


# --- structured → content ------------------------------------------------------------------

def safe_sheet_name(name: str, n: int, seen: set[str]) -> str:
    clean = BAD_SHEET_CHARS.sub("", " ".join(str(name or "").split()))[:31].strip() or f"Sheet{n}"
    candidate, k = clean, 2
    while candidate.lower() in seen:
        suffix = f" ({k})"
        candidate, k = clean[: 31 - len(suffix)] + suffix, k + 1
    seen.add(candidate.lower())
    return candidate


def sheets_to_content(structured: dict) -> str:
    sheets = structured.get("sheets") if isinstance(structured, dict) else None
    if not isinstance(sheets, list):
        raise RenderError("Expected {'sheets': [{'name', 'rows', 'formats'}]} for an xlsx document.")
    parts: list[str] = []
    seen: set[str] = set()
    for n, sheet in enumerate(sheets, 1):
        name = safe_sheet_name(sheet.get("name", ""), n, seen)
        rows = [[" ".join(str("" if c is None else c).split()).replace("|", "\\|") for c in row] for row in sheet.get("rows") or []]
        lines = [f"## Sheet: {name}"]
        width = max((len(r) for r in rows), default=0)
        if width:
            lines.append("|   | " + " | ".join(col_letter(c) for c in range(1, width + 1)) + " |")
            lines.append("|---|" + "---|" * width)
            for r, row in enumerate(rows, 1):
                padded = [*row, *[""] * (width - len(row))]
                lines.append(f"| {r} | " + " | ".join(padded) + " |")
        formats = [f for f in sheet.get("formats") or [] if f.get("range") and f.get("number_format")]
        if formats:
            lines.append("Formats: " + "; ".join(f"{f['range'].strip()} {' '.join(str(f['number_format']).split())}" for f in formats))
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + ("\n" if parts else "")


# --- typing cell text ------------------------------------------------------------------------

NUMBER = re.compile(r"^([+-]?)(\d+|\d{1,3}(?:,\d{3})+)(\.\d+)?([eE][+-]?\d+)?$")
CURRENCY = re.compile(r"^([+-]?)([$€£¥])\s?(\d+|\d{1,3}(?:,\d{3})+)(\.\d+)?$")
PERCENT = re.compile(r"^([+-]?\d+(?:\.\d+)?)%$")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?$")


def _number(sign: str, whole: str, frac: str | None, exp: str | None = None) -> int | float:
    text = f"{sign}{whole.replace(',', '')}{frac or ''}{exp or ''}"
    return float(text) if frac or exp else int(text)


def typed_value(text: str) -> tuple[object, str | None]:
    """The value a cell's text stands for and the number format it implies when none is
    given: (None, None) for empty; raises ValueError for a date that does not exist."""
    if text == "":
        return None, None
    if text.startswith("'"):
        return text[1:], None
    if m := NUMBER.match(text):
        return _number(*m.groups()), None
    if m := CURRENCY.match(text):
        sign, symbol, whole, frac = m.groups()
        return _number(sign, whole, frac), f'"{symbol}"#,##0' + (".00" if frac else "")
    if m := PERCENT.match(text):
        decimals = len(m.group(1).partition(".")[2])
        return float(m.group(1)) / 100, "0" + ("." + "0" * decimals if decimals else "") + "%"
    if text.upper() in ("TRUE", "FALSE"):
        return text.upper() == "TRUE", None
    if ISO_DATE.match(text):
        value = dt.datetime.fromisoformat(text.replace(" ", "T"))
        return value, "yyyy-mm-dd hh:mm" if len(text) > 10 else "yyyy-mm-dd"
    return text, None


def excel_serial(value: dt.datetime) -> float:
    delta = value - dt.datetime(1899, 12, 30)
    serial = delta.days + delta.seconds / 86400
    return int(serial) if serial == int(serial) else serial
