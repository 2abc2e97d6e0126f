"""A parsed xlsx document as a workbook: typed cells, formulas computed, written with XlsxWriter.

Every formula is computed here (with the `formulas` package, one cell at a time in
dependency order) because readers open the file with openpyxl `data_only=True` and see
only the value cached in the file (FORMATS.md).
"""

import datetime as dt
import graphlib
import io
import logging
import math
import re
from dataclasses import dataclass

import formulas
import numpy as np
import schedula
from formulas.errors import FormulaError
from formulas.tokens.operand import XlError

from .base import FIXED_CREATED, RenderError
from .sheets import MAX_COLS, MAX_ROWS, SheetLines, col_index, col_letter, excel_serial, range_cells, typed_value

VOLATILE = re.compile(r"\b(NOW|TODAY|RAND|RANDBETWEEN|RANDARRAY|INDIRECT|OFFSET)\s*\(", re.IGNORECASE)
REFERENCE = re.compile(r"^(?:(?:'((?:[^']|'')+)'|([^'!]+))!)?(.+)$")
CELL_RE = re.compile(r"^\$?([A-Z]{1,3})\$?(\d+)$")
COLS_RE = re.compile(r"^\$?([A-Z]{1,3}):\$?([A-Z]{1,3})$")
ROWS_RE = re.compile(r"^\$?(\d+):\$?(\d+)$")
FUNCTION_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\s*\(")
CLIP_AREA = 50_000  # a larger range is cut to the table: beyond it every cell is empty anyway


# A formula the engine cannot compute becomes a RenderError naming the cell; schedula would
# also log the same failure with a traceback at ERROR, which is noise in a worker's log.
logging.getLogger("schedula.utils.sol").setLevel(logging.CRITICAL)


@dataclass
class Cell:
    text: str
    value: object = None  # the literal, or the computed value of a formula (an error as "#DIV/0!")
    formula: str | None = None
    number_format: str | None = None


@dataclass
class Sheet:
    name: str
    cells: dict  # (row, col) → Cell, non-empty cells only
    max_row: int
    max_col: int


class Workbook:
    def __init__(self, structured: dict, where: SheetLines | None = None) -> None:
        self.where = where or SheetLines({}, {}, {})
        raw_sheets = structured.get("sheets") or []
        self._names = [str(raw.get("name", "")) for raw in raw_sheets]
        self.sheets: list[Sheet] = [self._sheet(n, raw) for n, raw in enumerate(raw_sheets)]
        self.by_name = {s.name.upper(): n for n, s in enumerate(self.sheets)}
        self._calc: dict[tuple[int, int, int], object] = {}
        self._shapes: dict[str, tuple[object, list[int]]] = {}
        self._evaluate()

    def _at(self, n: int, row: int, col: int) -> str:
        return f"{self.where.cell(n, row, col)}sheet {self._names[n]!r} cell {col_letter(col)}{row}"

    def _sheet(self, n: int, raw: dict) -> Sheet:
        name = str(raw.get("name", ""))
        rows = raw.get("rows") or []
        sheet = Sheet(name=name, cells={}, max_row=len(rows), max_col=max((len(r) for r in rows), default=0))
        for r, row in enumerate(rows, 1):
            for c, raw_text in enumerate(row, 1):
                text = str("" if raw_text is None else raw_text).strip()
                if text.startswith("=") and len(text) > 1:
                    sheet.cells[(r, c)] = Cell(text=text, formula=text)
                elif text:
                    try:
                        value, implied = typed_value(text)
                    except ValueError:
                        raise RenderError(f"{self._at(n, r, c)}: {text!r} is not a real date (write YYYY-MM-DD).") from None
                    sheet.cells[(r, c)] = Cell(text=text, value=value, number_format=implied)
        for k, fmt in enumerate(raw.get("formats") or []):
            spec = str(fmt.get("range", ""))
            line = self.where.formats.get((n, k))
            try:
                r1, c1, r2, c2 = range_cells(spec)
            except ValueError:
                raise RenderError(
                    f"{f'line {line}: ' if line else ''}sheet {name!r}: {spec!r} in Formats is not a cell or range like B2:B9."
                ) from None
            if r2 > MAX_ROWS or c2 > MAX_COLS:
                raise RenderError(f"{f'line {line}: ' if line else ''}sheet {name!r}: range {spec} is beyond Excel's last cell XFD1048576.")
            for (r, c), cell in sheet.cells.items():
                if r1 <= r <= r2 and c1 <= c <= c2:
                    cell.number_format = str(fmt.get("number_format", "")).strip() or cell.number_format
        return sheet

    # --- references ---------------------------------------------------------------------

    def _resolve(self, n: int, row: int, col: int, ref: str) -> tuple[int, int, int, int, int]:
        """A formula input such as 'B2:B3', "'CAP TABLE'!B:B" → (sheet, r1, c1, r2, c2)."""
        m = REFERENCE.match(ref)
        target = n
        if m and (m.group(1) or m.group(2)):
            sheet_name = (m.group(1) or "").replace("''", "'") or m.group(2)
            if sheet_name.upper() not in self.by_name:
                raise RenderError(f"{self._at(n, row, col)}: {self.sheets[n].cells[(row, col)].formula} refers to sheet "
                                  f"{sheet_name!r}, which this workbook does not have (sheets: {', '.join(s.name for s in self.sheets)}).")
            target = self.by_name[sheet_name.upper()]
        part = (m.group(3) if m else ref).upper()
        sheet = self.sheets[target]
        formula = self.sheets[n].cells[(row, col)].formula
        if cm := CELL_RE.match(part):
            r, c = int(cm.group(2)), col_index(cm.group(1))
            if r > sheet.max_row or c > sheet.max_col:
                extent = f"A1:{col_letter(sheet.max_col)}{sheet.max_row}" if sheet.max_row and sheet.max_col else "empty"
                raise RenderError(f"{self._at(n, row, col)}: {formula} refers to {part.replace('$', '')}"
                                  f"{'' if target == n else f' on sheet {sheet.name!r}'}, outside the sheet's table ({extent}).")
            return target, r, c, r, c
        if cm := COLS_RE.match(part):
            return target, 1, col_index(cm.group(1)), max(sheet.max_row, 1), col_index(cm.group(2))
        if rm := ROWS_RE.match(part):
            return target, int(rm.group(1)), 1, int(rm.group(2)), max(sheet.max_col, 1)
        try:
            r1, c1, r2, c2 = range_cells(part)
        except ValueError:
            raise RenderError(f"{self._at(n, row, col)}: {formula} uses the name {part!r}, which is neither a cell nor a "
                              "range (named ranges are not supported).") from None
        if (r2 - r1 + 1) * (c2 - c1 + 1) > CLIP_AREA:
            r2, c2 = max(min(r2, sheet.max_row), r1), max(min(c2, sheet.max_col), c1)
        return target, r1, c1, r2, c2

    # --- evaluation ---------------------------------------------------------------------

    def _compile(self, n: int, row: int, col: int, formula: str) -> tuple[object, list[str]]:
        """(compiled function, the references it takes, in order). A formula filled down
        a column has one shape ("=B2+C1", "=B3+C2", …): it is parsed once and reused."""
        outside_strings = re.sub(r'"[^"]*"', '""', formula)
        if m := VOLATILE.search(outside_strings):
            raise RenderError(f"{self._at(n, row, col)}: {formula} uses {m.group(1).upper()}(), whose value changes every time "
                              "the file is opened; write the date or number itself.")
        known = formulas.get_functions()
        for name in FUNCTION_CALL.findall(outside_strings):
            if name.upper().removeprefix("_XLFN.") not in known:
                raise RenderError(f"{self._at(n, row, col)}: {formula} uses {name}(), which is not an Excel function "
                                  "Taskwright can compute.")
        shape, refs = _shape(formula, row, col)
        distinct = len(set(refs)) == len(refs)
        if distinct and shape in self._shapes:
            func, order = self._shapes[shape]
            return func, [refs[i] for i in order]
        try:
            func = formulas.Parser().ast(formula)[1].compile()
        except (FormulaError, Exception):  # the parser raises several types for a malformed formula
            raise RenderError(f"{self._at(n, row, col)}: {formula} is not a formula Excel can read "
                              "(check the brackets, commas, quotes and references).") from None
        inputs = list(func.inputs)
        if distinct and sorted(inputs) == sorted(refs):
            self._shapes[shape] = (func, [refs.index(name) for name in inputs])
        return func, inputs

    def _evaluate(self) -> None:
        compiled: dict = {}
        deps: dict = {}
        formula_cells = [{rc for rc, cell in sheet.cells.items() if cell.formula is not None} for sheet in self.sheets]

        def formulas_in(t: int, r1: int, c1: int, r2: int, c2: int) -> list:
            area = (r2 - r1 + 1) * (c2 - c1 + 1)
            if area <= len(formula_cells[t]):
                return [(t, rr, cc) for rr in range(r1, r2 + 1) for cc in range(c1, c2 + 1) if (rr, cc) in formula_cells[t]]
            return [(t, rr, cc) for rr, cc in formula_cells[t] if r1 <= rr <= r2 and c1 <= cc <= c2]

        for n, sheet in enumerate(self.sheets):
            for (r, c), cell in sheet.cells.items():
                if cell.formula is None:
                    continue
                func, inputs = self._compile(n, r, c, cell.formula)
                refs = [self._resolve(n, r, c, ref) for ref in inputs]
                compiled[(n, r, c)] = (func, refs)
                deps[(n, r, c)] = [dep for ref in refs for dep in formulas_in(*ref)]
        for key in self._order(deps):
            func, refs = compiled[key]
            args = [self._range_value(*ref) for ref in refs]
            try:
                result = func(*args)
            except Exception as exc:  # schedula wraps the failing Excel function's error
                cell = self.sheets[key[0]].cells[key[1:]]
                detail = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], str) else type(exc).__name__
                raise RenderError(f"{self._at(*key)}: {cell.formula} could not be computed ({detail} is not supported or "
                                  "got arguments it cannot use).") from None
            self._calc[key] = _scalar(result)
            self.sheets[key[0]].cells[key[1:]].value = _public(self._calc[key])

    def _order(self, deps: dict) -> list:
        """Formula cells so that each comes after the formula cells it reads; a cycle is an error."""
        try:
            return list(graphlib.TopologicalSorter(deps).static_order())
        except graphlib.CycleError as exc:
            loop = list(reversed(exc.args[1]))  # graphlib lists a cycle from reader back to read; say it as it reads
            names = " → ".join(f"{col_letter(c)}{r}" for _, r, c in loop)
            raise RenderError(f"{self._at(*loop[0])}: circular reference {names}; a formula cannot depend on itself.") from None

    def _input(self, n: int, r: int, c: int) -> object:
        cell = self.sheets[n].cells.get((r, c))
        if cell is None:
            return schedula.EMPTY
        if cell.formula is not None:
            return self._calc[(n, r, c)]
        if isinstance(cell.value, dt.datetime):
            return excel_serial(cell.value)
        return cell.value

    def _range_value(self, n: int, r1: int, c1: int, r2: int, c2: int):
        values = np.empty((r2 - r1 + 1, c2 - c1 + 1), dtype=object)
        for r in range(r1, r2 + 1):
            for c in range(c1, c2 + 1):
                values[r - r1, c - c1] = self._input(n, r, c)
        ref = f"{col_letter(c1)}{r1}:{col_letter(c2)}{r2}"
        return formulas.Ranges().push(ref, values)

    # --- output -------------------------------------------------------------------------

    def to_xlsx(self) -> bytes:
        import xlsxwriter

        buffer = io.BytesIO()
        book = xlsxwriter.Workbook(buffer, {"in_memory": True, "use_future_functions": True, "strings_to_numbers": False,
                                            "strings_to_formulas": False, "strings_to_urls": False})
        book.set_properties({"created": dt.datetime(*FIXED_CREATED)})
        styles: dict = {}

        def style(fmt: str | None):
            if not fmt:
                return None
            if fmt not in styles:
                styles[fmt] = book.add_format({"num_format": fmt})
            return styles[fmt]

        for sheet in self.sheets:
            ws = book.add_worksheet(sheet.name)
            for (r, c), cell in sorted(sheet.cells.items()):
                fmt = style(cell.number_format)
                if cell.formula is not None:
                    ws.write_formula(r - 1, c - 1, cell.formula, fmt, cell.value)
                elif isinstance(cell.value, bool):
                    ws.write_boolean(r - 1, c - 1, cell.value, fmt)
                elif isinstance(cell.value, int | float):
                    ws.write_number(r - 1, c - 1, cell.value, fmt)
                elif isinstance(cell.value, dt.datetime):
                    ws.write_datetime(r - 1, c - 1, cell.value, fmt)
                else:
                    ws.write_string(r - 1, c - 1, str(cell.value), fmt)
            ws.autofit()
        if not self.sheets:
            book.add_worksheet("Sheet1")
        book.close()
        return buffer.getvalue()


STRING_LITERAL = re.compile(r'("(?:[^"]|"")*")')
CELL_TOKEN = re.compile(r"(?<![A-Za-z0-9_.!$])((?:'(?:[^']|'')+'|[A-Za-z_][A-Za-z0-9_.]*)!)?"
                        r"(\$?)([A-Za-z]{1,3})(\$?)(\d+)(?::(\$?)([A-Za-z]{1,3})(\$?)(\d+))?(?![A-Za-z0-9_(!])")


def _shape(formula: str, row: int, col: int) -> tuple[str, list[str]]:
    """The formula with each cell reference written relative to its own cell (R[-1]C[0],
    or R2C2 where $-anchored), and the references as the formula engine names its
    inputs (upper case, no $). Two cells of one shape compute alike."""
    refs: list[str] = []

    def relative(dollar_col: str, letters: str, dollar_row: str, digits: str) -> str:
        r, c = int(digits), col_index(letters)
        return f"R{r if dollar_row else f'[{r - row}]'}C{c if dollar_col else f'[{c - col}]'}"

    def token(m: re.Match) -> str:
        sheet = (m.group(1) or "").upper()
        first = relative(*m.group(2, 3, 4, 5))
        last = relative(*m.group(6, 7, 8, 9)) if m.group(7) else ""
        name = f"{m.group(3)}{m.group(5)}" + (f":{m.group(7)}{m.group(9)}" if m.group(7) else "")
        refs.append(sheet + name.upper())
        return "{" + sheet + first + (":" + last if last else "") + "}"

    parts = STRING_LITERAL.split(formula)
    shaped = "".join(part if k % 2 else CELL_TOKEN.sub(token, part) for k, part in enumerate(parts))
    return shaped, refs


def _scalar(result: object) -> object:
    if isinstance(result, np.ndarray):
        result = result.ravel()[0] if result.size else schedula.EMPTY
    if isinstance(result, np.generic):
        result = result.item()
    return result


def _public(value: object) -> object:
    """A computed value as it is cached in the file: a number, text, a boolean or an error code."""
    if value is schedula.EMPTY:
        return 0
    if isinstance(value, XlError):
        return str(value)
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            return "#NUM!"
        return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 2**53 else value
    return str(value)
