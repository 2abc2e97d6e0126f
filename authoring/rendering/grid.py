"""The spreadsheet grid editor's forms of an xlsx document, and its computed values.

Grid form: {"sheets": [{"name", "rows": [[cell text, ...], ...], "formats": [{"range",
"number_format"}]}]}: the same structured form parse_sheets gives, so the document's
content (the pipe-table text form, docs/content-format.md) stays the one thing saved, and
the grid converts to it and back without loss.

Values are computed by the same Workbook that writes the cached values into the xlsx
file, so what the grid shows is what openpyxl `data_only=True` reads from the download.
"""

import re
from dataclasses import dataclass, field

from .base import RenderError
from .preview import format_value
from .sheets import BAD_SHEET_CHARS, parse_sheets, sheets_to_content, split_ref
from .workbook import Workbook

# The grid is for sheets a person edits cell by cell; a bigger table stays in its text form.
MAX_GRID_ROWS = 2_000
MAX_GRID_COLS = 100
MAX_GRID_CELLS = 50_000
MAX_GRID_SHEETS = 50
# A formula that cannot be computed is set aside and the rest computed again, so one bad
# cell does not blank the whole sheet; past this many, the remaining cells stay uncomputed.
MAX_SET_ASIDE = 20
ERROR_MARK = "#ERROR"


@dataclass
class GridValues:
    """Per sheet, per cell: the text shown (number format applied) and whether it is a
    number (shown right-aligned); the problems found, each tied to its cell when it has one."""

    sheets: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"sheets": self.sheets, "errors": self.errors}


def _text(value: object) -> str:
    return " ".join(str("" if value is None else value).split())


def grid_clean(data: object) -> dict:
    """A grid posted by the browser, checked and reduced to the structured form. Raises
    RenderError in plain words when it is not one."""
    sheets = data.get("sheets") if isinstance(data, dict) else None
    if not isinstance(sheets, list) or not sheets:
        raise RenderError("The spreadsheet has no sheets; add a sheet before saving.")
    if len(sheets) > MAX_GRID_SHEETS:
        raise RenderError(f"A spreadsheet edited in the grid has at most {MAX_GRID_SHEETS} sheets.")
    seen: set[str] = set()
    clean: list[dict] = []
    cells = 0
    for n, sheet in enumerate(sheets, 1):
        if not isinstance(sheet, dict):
            raise RenderError(f"Sheet {n} is not a sheet.")
        name = _text(sheet.get("name"))
        if not name:
            raise RenderError(f"Sheet {n} has no name; give every sheet a name (its tab label).")
        if len(name) > 31:
            raise RenderError(f"The sheet name {name!r} is longer than the 31 characters Excel allows.")
        if BAD_SHEET_CHARS.search(name):
            raise RenderError(f"The sheet name {name!r} contains one of [ ] : * ? / \\, which Excel does not allow.")
        if name.lower() in seen:
            raise RenderError(f"Two sheets are called {name!r}; Excel needs each sheet name once (ignoring case).")
        seen.add(name.lower())
        rows = sheet.get("rows") or []
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise RenderError(f"Sheet {name!r}: its rows could not be read.")
        if len(rows) > MAX_GRID_ROWS or any(len(r) > MAX_GRID_COLS for r in rows):
            raise RenderError(f"Sheet {name!r} is larger than the grid edits ({MAX_GRID_ROWS:,} rows, {MAX_GRID_COLS} columns); "
                              "edit it in its text form.")
        cells += sum(len(r) for r in rows)
        if cells > MAX_GRID_CELLS:
            raise RenderError(f"The spreadsheet has more than {MAX_GRID_CELLS:,} cells; edit it in its text form.")
        formats = []
        for fmt in sheet.get("formats") or []:
            if not isinstance(fmt, dict):
                continue
            spec, number_format = _text(fmt.get("range")).upper().replace("$", ""), _text(fmt.get("number_format"))
            if spec and number_format:
                formats.append({"range": spec, "number_format": number_format})
        clean.append({"name": name, "rows": [[_text(c) for c in row] for row in rows], "formats": formats})
    return {"sheets": clean}


def grid_to_content(data: object) -> str:
    """The document's content for a grid; reading it back gives the same grid."""
    structured = grid_clean(data)
    content = sheets_to_content(structured)
    parse_sheets(content)  # a Formats range that is not a range, say, is refused here, not at download
    return content


def grid_from_content(content: str) -> dict:
    """The grid of a document's content (RenderError, naming the line, when it does not parse).
    Rows are padded to one width per sheet so the grid is a rectangle."""
    structured, _where = parse_sheets(content)
    for sheet in structured["sheets"]:
        width = max((len(r) for r in sheet["rows"]), default=0)
        sheet["rows"] = [[*row, *[""] * (width - len(row))] for row in sheet["rows"]]
    return structured


def _cell_of(message: str, names: list[str]) -> tuple[int, str] | None:
    """(sheet index, 'B4') of the cell a Workbook error names ("sheet 'Price' cell B4: …")."""
    best = None
    for n, name in enumerate(names):
        prefix = f"sheet {name!r} cell "
        if message.startswith(prefix) and (best is None or len(prefix) > len(f"sheet {names[best]!r} cell ")):
            best = n
    if best is None:
        return None
    m = re.match(r"([A-Z]{1,3})(\d+):", message[len(f"sheet {names[best]!r} cell "):])
    return (best, m.group(1) + m.group(2)) if m else None


def _uncomputed(text: str) -> str:
    """What a cell shows when the sheet could not be computed: literals as typed, no formulas."""
    if text == "'" + ERROR_MARK:
        return ERROR_MARK
    return "" if text.startswith("=") else text


def _shown(book: Workbook | None, structured: dict) -> list[dict]:
    out = []
    for n, sheet in enumerate(structured["sheets"]):
        values, numbers = [], []
        for r, row in enumerate(sheet["rows"], 1):
            shown_row, number_row = [], []
            for c, text in enumerate(row, 1):
                cell = book.sheets[n].cells.get((r, c)) if book is not None else None
                if cell is None:
                    shown_row.append("" if book is not None else _uncomputed(text))
                    number_row.append(False)
                    continue
                shown_row.append(format_value(cell.value, cell.number_format))
                number_row.append(isinstance(cell.value, int | float) and not isinstance(cell.value, bool))
            values.append(shown_row)
            numbers.append(number_row)
        out.append({"values": values, "numbers": numbers})
    return out


def grid_evaluate(structured: dict) -> GridValues:
    """Every cell's value as the exported file caches it. A formula that cannot be computed
    is reported against its cell and shown as #ERROR; the other cells are still computed."""
    sheets = [{**s, "rows": [list(r) for r in s["rows"]]} for s in structured["sheets"]]
    working = {"sheets": sheets}
    names = [s["name"] for s in sheets]
    errors: list[dict] = []
    for _attempt in range(MAX_SET_ASIDE + 1):
        try:
            book = Workbook(working)
        except RenderError as error:
            where = _cell_of(error.message, names)
            if where is None:
                errors.append({"message": error.message, "sheet": None, "cell": None})
                return GridValues(sheets=_shown(None, working), errors=errors)
            n, ref = where
            row, col = split_ref(ref)
            errors.append({"message": error.message, "sheet": n, "cell": ref})
            sheets[n]["rows"][row - 1][col - 1] = "'" + ERROR_MARK  # text, so formulas reading it give #VALUE!
            continue
        result = GridValues(sheets=_shown(book, working), errors=errors)
        for err in errors:
            row, col = split_ref(err["cell"])
            result.sheets[err["sheet"]]["values"][row - 1][col - 1] = ERROR_MARK
            result.sheets[err["sheet"]]["numbers"][row - 1][col - 1] = False
        return result
    errors.append({"message": f"More than {MAX_SET_ASIDE} formulas could not be computed; fix these first.", "sheet": None, "cell": None})
    return GridValues(sheets=_shown(None, working), errors=errors)
