"""A data-room file as the text an agent reads: markdown for docx/md/pdf, per-sheet tables
with computed values and formulas for xlsx, slides with notes for pptx, csv as is.

Content that does not parse (a hand-edited sheet with a bad formula, say) is shown as
written with the reason, never as an error: the file is still readable."""

import datetime as dt

from authoring.rendering.base import RenderError
from authoring.rendering.markdown import plain_text
from authoring.rendering.preview import format_value
from authoring.rendering.sheets import col_letter, parse_sheets
from authoring.rendering.slides import parse_slides
from authoring.rendering.workbook import Workbook

from .world import Item


def raw_value(value: object) -> str:
    """A cell's value as stored (what a formula computed), without number formatting."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ") if value.time() != dt.time() else value.date().isoformat()
    if isinstance(value, float):
        return f"{value:.15g}"
    return str(value)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def sheets_text(content: str) -> str:
    structured, where = parse_sheets(content)
    book = Workbook(structured, where)
    parts: list[str] = []
    for sheet in book.sheets:
        if not sheet.max_row or not sheet.max_col:
            parts.append(f"## Sheet: {sheet.name} (empty)")
            continue
        lines = [f"## Sheet: {sheet.name} ({_count(sheet.max_row, 'row')} × {_count(sheet.max_col, 'column')})",
                 "|   | " + " | ".join(col_letter(c) for c in range(1, sheet.max_col + 1)) + " |",
                 "|---|" + "---|" * sheet.max_col]
        formulas: list[str] = []
        for r in range(1, sheet.max_row + 1):
            shown = []
            for c in range(1, sheet.max_col + 1):
                cell = sheet.cells.get((r, c))
                if cell is None:
                    shown.append("")
                    continue
                display = format_value(cell.value, cell.number_format)
                shown.append(_cell(display))
                if cell.formula is not None:
                    raw = raw_value(cell.value)
                    extra = f", shown as {display}" if cell.number_format and display != raw else ""
                    formulas.append(f"{col_letter(c)}{r} = {raw}{extra}  (formula {cell.formula})")
            lines.append(f"| {r} | " + " | ".join(shown) + " |")
        if formulas:
            lines += ["", "Formula cells (computed value, then the formula):", *formulas]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def slides_text(content: str) -> str:
    deck = parse_slides(content)
    parts = [f"Deck title: {plain_text(deck['title'])}"] if deck["title"] else []
    for n, slide in enumerate(deck["slides"], 1):
        lines = [f"## Slide {n}: {plain_text(slide['title'])}"]
        lines += [f"- {b}" for b in slide["bullets"]]
        if slide["notes"]:
            lines.append(f"Speaker notes: {slide['notes']}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) or "(no slides)"


def file_text(item: Item) -> str:
    content = item.content or ""
    if not content.strip():
        return "(this file is empty)"
    try:
        if item.format == "xlsx":
            return sheets_text(content)
        if item.format == "pptx":
            return slides_text(content)
    except RenderError as exc:
        return f"(This {item.format} file could not be laid out: {exc.message} Its text as written follows.)\n\n{content}"
    return content
