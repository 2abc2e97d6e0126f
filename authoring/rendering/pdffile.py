"""pdf (fpdf2) from the block form of markdown content.

The font: Helvetica, one of the PDF standard fonts every reader has, when all of the
document's text is in Windows-1252 (English and Western European text, with curly quotes,
dashes, the euro sign and bullets); otherwise DejaVu Sans, embedded, for the rest of
Unicode. A standard font is not embedded, so such a PDF is a few kB and renders in about
10 ms; an embedded font is parsed and subset with fontTools, about 0.2 s a PDF
(docs/performance.md). Without DejaVu on the machine, what Windows-1252 cannot hold is
replaced.
"""

import datetime as dt
import json
import logging
import os

from fpdf import FPDF

from .base import FIXED_CREATED
from .markdown import Run, block_numbers, inline_runs, plain_text
from .wordfile import document_title

# fpdf2 subsets embedded fonts with fontTools, which logs every glyph table at INFO:
# hundreds of lines per PDF in a worker's log, none of them actionable.
for _name in ("fontTools.subset", "fontTools.ttLib", "fontTools.ttLib.ttFont"):
    logging.getLogger(_name).setLevel(logging.WARNING)

DEJAVU = "/usr/share/fonts/truetype/dejavu"
_FONT_FILES = {"": "DejaVuSans.ttf", "B": "DejaVuSans-Bold.ttf", "I": "DejaVuSans-Oblique.ttf", "BI": "DejaVuSans-BoldOblique.ttf"}
STANDARD_ENCODING = "windows-1252"  # what fpdf2 writes as the standard fonts' WinAnsiEncoding
_TO_STANDARD = str.maketrans({"\u2212": "-", "\u2010": "-", "\u2011": "-", "\u2192": "->", "\u2264": "<=", "\u2265": ">="})


def _fits_standard_font(blocks: list[dict]) -> bool:
    try:
        json.dumps(blocks, ensure_ascii=False).encode(STANDARD_ENCODING)
    except UnicodeEncodeError:
        return False
    return True


class _Pdf(FPDF):
    def __init__(self, title: str, *, standard: bool) -> None:
        super().__init__(format="A4")
        self.unicode = not standard and all(os.path.exists(os.path.join(DEJAVU, f)) for f in _FONT_FILES.values())
        self.family = "DejaVu" if self.unicode else "Helvetica"
        self.core_fonts_encoding = STANDARD_ENCODING
        self.set_creation_date(dt.datetime(*FIXED_CREATED, tzinfo=dt.UTC))
        self.set_title(title)
        self.set_margins(20, 20, 20)
        self.set_auto_page_break(True, margin=20)
        self.add_page()

    def set_font(self, family: str | None = None, style: str = "", size: float = 0) -> None:
        """A DejaVu style is added the first time the document uses it: fpdf2 parses a font
        file with fontTools on every add_font (about 0.18 s each), and most documents use
        two of the four styles."""
        if self.unicode and family == "DejaVu":
            key = "".join(sorted(style.upper().replace("U", "")))
            if f"dejavu{key}" not in self.fonts:
                self.add_font("DejaVu", key, os.path.join(DEJAVU, _FONT_FILES[key]))
        super().set_font(family, style, size)

    def text_of(self, text: str) -> str:
        """In a standard font, what Windows-1252 cannot hold is replaced (only without DejaVu)."""
        if self.unicode:
            return text
        return text.translate(_TO_STANDARD).encode(STANDARD_ENCODING, "replace").decode(STANDARD_ENCODING)

    def runs(self, runs: list[Run], size: float, *, bold: bool = False, line: float | None = None) -> None:
        height = line or size * 0.5
        for r in runs:
            style = ("B" if r.bold or bold else "") + ("I" if r.italic else "")
            self.set_font(self.family, style, size)
            self.write(height, self.text_of(r.text))
        self.ln(height)


def render_pdf(blocks: list[dict]) -> bytes:
    title = document_title(blocks)
    pdf = _Pdf(title, standard=_fits_standard_font([title, blocks]))
    sizes = {1: 18, 2: 15, 3: 13}
    for b in blocks:
        kind = b["type"]
        if kind == "heading":
            pdf.ln(3)
            pdf.runs(inline_runs(b["text"]), sizes.get(b["level"], 12), bold=True)
            pdf.ln(2)
        elif kind == "paragraph":
            pdf.runs(inline_runs(b["text"]), 11)
            pdf.ln(3)
        elif kind in ("bullets", "numbered"):
            for n, item in zip(block_numbers(b, len(b["items"])), b["items"], strict=False):
                marker = f"{n}." if kind == "numbered" and n is not None else "•"
                pdf.set_font(pdf.family, "", 11)
                pdf.set_x(pdf.l_margin + 4)
                pdf.cell(7, 5.5, marker)
                left = pdf.l_margin
                pdf.set_left_margin(left + 11)
                pdf.runs(inline_runs(item), 11)
                pdf.set_left_margin(left)
            pdf.ln(3)
        elif kind == "table":
            width = max([len(b["header"])] + [len(r) for r in b["rows"]])
            if not width:
                continue
            pdf.set_font(pdf.family, "", 10)
            with pdf.table(first_row_as_headings=bool(b["header"])) as table:
                for row in [b["header"], *b["rows"]] if b["header"] else b["rows"]:
                    cells = table.row()
                    for c in range(width):
                        cells.cell(pdf.text_of(plain_text(row[c]) if c < len(row) else ""))
            pdf.ln(3)
    return bytes(pdf.output())
