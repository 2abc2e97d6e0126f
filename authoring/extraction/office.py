"""docx, xlsx and pptx → content (docs/content-format.md). The zip has been checked by
core.archives before any of these libraries opens it; all three parse XML without
resolving entities (python-docx/pptx: lxml with resolve_entities=False; openpyxl: defusedxml)."""

import datetime as dt
import io

from authoring.extraction.common import (
    MAX_SHEET_COLUMNS,
    MAX_SHEET_ROWS,
    MAX_SHEETS,
    MAX_SLIDES,
    Out,
    md_table,
    one_line,
)

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


# --- docx ---------------------------------------------------------------------------

def docx_to_markdown(data: bytes, out: Out) -> None:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(data))
    numbering = _numbering_formats(document)
    headers, footers = _margins(document)
    for text in headers:
        out.add(text)
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            out.add(md_table([[cell.text for cell in row.cells] for row in block.rows]))
        elif isinstance(block, Paragraph):
            _paragraph(block, numbering, out)
    for text in footers:
        out.add(text)
    if headers or footers:
        kept = " and ".join(part for part, found in (("first", headers), ("last", footers)) if found)
        out.note(f"The page header and footer text ({'; '.join(f'“{t[:60]}”' for t in [*headers, *footers])}) is kept as the "
                 f"{kept} paragraph{'s' if headers and footers else ''}: Taskwright's documents have no page header or footer.",
                 in_content=False)  # nothing was cut: the version note says where it went


def _margins(document) -> tuple[list[str], list[str]]:
    """The text of the page headers and footers of every section, each once, in order (a
    header repeated on every page is one line, not one per section)."""
    found: dict[str, list[str]] = {"header": [], "footer": []}
    for section in document.sections:
        for kind in ("first_page_header", "header", "even_page_header", "first_page_footer", "footer", "even_page_footer"):
            part = getattr(section, kind)
            if part.is_linked_to_previous and kind not in ("header", "footer"):
                continue
            bucket = found["header" if kind.endswith("header") else "footer"]
            for paragraph in part.paragraphs:
                text = " ".join(paragraph.text.split())
                if text and text not in bucket:
                    bucket.append(text)
    return found["header"], found["footer"]


def _paragraph(paragraph, numbering: dict[tuple[str, int], str], out: Out) -> None:
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style == "Title" or style.startswith("Heading "):
        level = 1 if style == "Title" else _int(style.removeprefix("Heading "), 1)
        text = one_line(paragraph.text, 1_000)
        if text:
            out.add(f"{'#' * min(max(level, 1), 3)} {text}")
        return
    text = _runs_markdown(paragraph)
    if not text.strip():
        return
    marker = _list_marker(paragraph, style, numbering)
    if marker:
        out.add(marker + " ".join(text.split()), tight=True)
    else:
        out.add(text)


def _runs_markdown(paragraph) -> str:
    """Runs as markdown, merging neighbours of the same weight so bold words in separate
    runs come out as one **span**."""
    from docx.text.hyperlink import Hyperlink

    spans: list[list] = []  # [bold, italic, text]
    for item in paragraph.iter_inner_content():
        if isinstance(item, Hyperlink):
            address = item.address or ""
            text = item.text
            if address.startswith(("http://", "https://", "mailto:")) and text.strip():
                text = f"[{text.strip()}]({address.replace(' ', '%20').replace(')', '%29')})"
            style = (False, False)
        else:
            text = item.text
            style = (bool(item.bold), bool(item.italic))
        if spans and (tuple(spans[-1][:2]) == style or not text.strip()):
            spans[-1][2] += text
        else:
            spans.append([*style, text])
    parts = []
    for bold, italic, text in spans:
        core = text.strip()
        mark = "***" if bold and italic else "**" if bold else "*" if italic else ""
        if mark and core:
            lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()):]
            text = f"{lead}{mark}{core}{mark}{trail}"
        parts.append(text)
    return "".join(parts).replace("\t", " ")


def _list_marker(paragraph, style: str, numbering: dict[tuple[str, int], str]) -> str:
    num_pr = paragraph._p.find(f"{_W}pPr/{_W}numPr")
    if num_pr is not None:
        num_id = num_pr.find(f"{_W}numId")
        ilvl = num_pr.find(f"{_W}ilvl")
        num = num_id.get(f"{_W}val") if num_id is not None else None
        level = _int(ilvl.get(f"{_W}val") if ilvl is not None else "0", 0)
        if num and num != "0":
            kind = numbering.get((num, level), "bullet")
            return "  " * min(level, 8) + ("- " if kind in ("bullet", "none") else "1. ")
    if style.startswith("List Number"):
        return "1. "
    if style.startswith(("List Bullet", "List Paragraph")):
        return "- "
    return ""


def _numbering_formats(document) -> dict[tuple[str, int], str]:
    """(numId, level) → numFmt ("bullet", "decimal" …) from the numbering part."""
    try:
        root = document.part.numbering_part.element
    except (KeyError, NotImplementedError, AttributeError):
        return {}
    abstract = {}
    for node in root.findall(f"{_W}abstractNum"):
        levels = {}
        for lvl in node.findall(f"{_W}lvl"):
            fmt = lvl.find(f"{_W}numFmt")
            levels[_int(lvl.get(f"{_W}ilvl"), 0)] = fmt.get(f"{_W}val") if fmt is not None else "bullet"
        abstract[node.get(f"{_W}abstractNumId")] = levels
    formats = {}
    for num in root.findall(f"{_W}num"):
        ref = num.find(f"{_W}abstractNumId")
        levels = abstract.get(ref.get(f"{_W}val") if ref is not None else None, {})
        for level, fmt in levels.items():
            formats[(num.get(f"{_W}numId"), level)] = fmt
    return formats


# --- xlsx ---------------------------------------------------------------------------

def xlsx_to_markdown(data: bytes, out: Out) -> None:
    """`## Sheet: name` + a table whose header is the column letters and whose first
    column is the row number; formulas kept as `=…` (data_only=False); the cells' number
    formats (0.0%, #,##0.00, dates…) as the sheet's `Formats:` line. Read-only mode streams
    each sheet, and rows/columns are capped, so memory stays bounded. What was cut is told in
    the version note only: a sheet's content holds tables and Formats lines, nothing else
    (a note there would stop the workbook from being built)."""
    import openpyxl
    from openpyxl.utils import get_column_letter

    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=False)
    try:
        sheets = workbook.worksheets
        for number, sheet in enumerate(sheets, start=1):
            if number > MAX_SHEETS:
                out.note(f"Only the first {MAX_SHEETS} sheets were imported; {len(sheets) - MAX_SHEETS} more are in the original.",
                         in_content=False)
                break
            rows: list[tuple[int, list[str]]] = []
            formats: dict[int, list[tuple[int, str]]] = {}  # column → [(row, number format)]
            more_rows = more_columns = False
            width = 0
            for row_number, row in enumerate(
                sheet.iter_rows(max_row=MAX_SHEET_ROWS + 1, max_col=MAX_SHEET_COLUMNS + 1), start=1
            ):
                values = [cell.value for cell in row]
                for column, cell in enumerate(row[:MAX_SHEET_COLUMNS], start=1):
                    number_format = getattr(cell, "number_format", None) or "General"
                    if cell.value is not None and number_format != "General":
                        formats.setdefault(column, []).append((row_number, number_format))
                if row_number > MAX_SHEET_ROWS:
                    more_rows = more_rows or any(v is not None for v in values)
                    break
                cells = [_cell(v) for v in values]
                if len(cells) > MAX_SHEET_COLUMNS:
                    more_columns = more_columns or any(cells[MAX_SHEET_COLUMNS:])
                    cells = cells[:MAX_SHEET_COLUMNS]
                while cells and not cells[-1]:
                    cells.pop()
                if cells:
                    rows.append((row_number, cells))
                    width = max(width, len(cells))
            out.add(f"## Sheet: {one_line(sheet.title, 100)}")
            if rows:
                header = ["", *(get_column_letter(i) for i in range(1, width + 1))]
                out.add(md_table([header, *([str(n), *cells] for n, cells in rows)]))
                kept, dropped = _formats_line(formats)
                if kept:
                    out.add(kept)
                if dropped:
                    out.note(f"Sheet {sheet.title!r}: the number formats of {', '.join(dropped)} have sections (positive;negative), "
                             "which were not kept: those cells show as General.", in_content=False)
            if more_rows or more_columns:
                out.note(
                    f"Sheet {sheet.title!r}: only the first {MAX_SHEET_ROWS:,} rows and {MAX_SHEET_COLUMNS} columns were imported.",
                    in_content=False,
                )
    finally:
        workbook.close()


def _formats_line(formats: dict[int, list[tuple[int, str]]]) -> tuple[str, list[str]]:
    """The sheet's `Formats:` line from each column's formatted cells, runs of one format
    down a column as one range (B2:B9); and the ranges whose format cannot be written there
    (one with `;` sections, which the line uses as its separator)."""
    from openpyxl.utils import get_column_letter

    entries, dropped = [], []
    for column, cells in sorted(formats.items()):
        letter = get_column_letter(column)
        start = end = None
        current = ""
        for row, number_format in [*cells, (0, "")]:
            if start is not None and (number_format != current or row != end + 1):
                cells_range = f"{letter}{start}" + (f":{letter}{end}" if end != start else "")
                if ";" in current:
                    dropped.append(cells_range)
                else:
                    entries.append(f"{cells_range} {' '.join(current.split())}")
                start = None
            if number_format and start is None:
                start, current = row, number_format
            end = row
    return ("Formats: " + "; ".join(entries) if entries else ""), dropped


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dt.datetime) and value.time() == dt.time(0):
        return value.date().isoformat()
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if hasattr(value, "text") and not isinstance(value, str):  # ArrayFormula, DataTableFormula
        return str(value.text or "")
    return str(value)


# --- pptx ---------------------------------------------------------------------------

def pptx_to_markdown(data: bytes, out: Out) -> None:
    """One `## title` per slide, `- ` bullets (indented by level), tables, `Notes:`."""
    import pptx

    presentation = pptx.Presentation(io.BytesIO(data))
    slides = list(presentation.slides)
    for number, slide in enumerate(slides, start=1):
        if number > MAX_SLIDES:
            out.note(f"Only the first {MAX_SLIDES} slides were imported; {len(slides) - MAX_SLIDES} more are in the original.")
            break
        title_shape = slide.shapes.title
        title = one_line(title_shape.text_frame.text, 300) if title_shape is not None and title_shape.has_text_frame else ""
        out.add(f"## {title or f'Slide {number}'}")
        for shape in _shapes(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if shape.has_text_frame:
                for paragraph in shape.text_frame.paragraphs:
                    text = one_line(paragraph.text)
                    if text:
                        out.add("  " * min(paragraph.level, 8) + "- " + text, tight=True)
            elif shape.has_table:
                out.add(md_table([[cell.text for cell in row.cells] for row in shape.table.rows]))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            lines = [one_line(p.text) for p in slide.notes_slide.notes_text_frame.paragraphs]
            notes = "\n".join(line for line in lines if line)
            if notes:
                out.add(f"Notes: {notes}")


def _shapes(shapes):
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    for shape in shapes:
        try:
            is_group = shape.shape_type == MSO_SHAPE_TYPE.GROUP
        except NotImplementedError:  # a shape kind python-pptx does not model: no text we can read
            continue
        if is_group:
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _int(text: str | None, default: int) -> int:
    try:
        return int(text or "")
    except ValueError:
        return default
