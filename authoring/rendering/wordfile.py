"""docx (python-docx) from the block form of markdown content.

python-docx is imported when a file is rendered, not when the package is imported:
pages that only preview documents do not pay for it.
"""

import datetime as dt
import io
import zipfile

from .base import FIXED_CREATED
from .markdown import Run, inline_runs, plain_text

ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def stable_zip(data: bytes) -> bytes:
    """The same zip with every entry's timestamp fixed, so the same document gives the
    same bytes (python-docx and python-pptx stamp entries with the time of saving)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=ZIP_DATE)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            target.writestr(fixed, source.read(info.filename))
    return out.getvalue()


def document_title(blocks: list[dict]) -> str:
    return next((plain_text(b["text"]) for b in blocks if b["type"] == "heading"), "")


# --- docx ----------------------------------------------------------------------------------

def _add_runs(paragraph, runs: list[Run], *, bold: bool = False) -> None:
    for r in runs:
        run = paragraph.add_run(r.text)
        run.bold = r.bold or bold or None
        run.italic = r.italic or None
        if r.code:
            run.font.name = "Courier New"


def _restart_numbering(document, paragraph_style_name: str):
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    """A fresh w:num for a new numbered list so it starts at 1 instead of continuing
    the previous list (python-docx's 'List Number' style shares one numbering)."""
    numbering = document.part.numbering_part.numbering_definitions._numbering
    style = document.styles[paragraph_style_name]
    num_pr = style.element.pPr.numPr if style.element.pPr is not None else None
    if num_pr is None or num_pr.numId is None:
        return None
    base_num = next((n for n in numbering.num_lst if n.numId == num_pr.numId.val), None)
    if base_num is None:
        return None
    new_id = max(n.numId for n in numbering.num_lst) + 1
    num = numbering.add_num(base_num.abstractNumId.val)
    num.numId = new_id
    override = OxmlElement("w:lvlOverride")
    override.set(qn("w:ilvl"), "0")
    start = OxmlElement("w:startOverride")
    start.set(qn("w:val"), "1")
    override.append(start)
    num.append(override)
    return new_id


def _set_num(paragraph, num_id: int) -> None:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    p_pr = paragraph._p.get_or_add_pPr()
    num_pr = OxmlElement("w:numPr")
    ilvl = OxmlElement("w:ilvl")
    ilvl.set(qn("w:val"), "0")
    num_id_el = OxmlElement("w:numId")
    num_id_el.set(qn("w:val"), str(num_id))
    num_pr.append(ilvl)
    num_pr.append(num_id_el)
    p_pr.append(num_pr)


def render_docx(blocks: list[dict], *, author: str = "") -> bytes:
    import docx
    from docx.shared import Cm

    document = docx.Document()
    props = document.core_properties
    props.title = document_title(blocks)
    props.author = author
    props.last_modified_by = author
    props.created = props.modified = dt.datetime(*FIXED_CREATED, tzinfo=dt.UTC)
    props.revision = 1
    numbered_lists = 0
    for b in blocks:
        kind = b["type"]
        if kind == "heading":
            _add_runs(document.add_heading("", level=min(max(int(b["level"] or 1), 1), 9)), inline_runs(b["text"]))
        elif kind == "paragraph":
            _add_runs(document.add_paragraph(), inline_runs(b["text"]))
        elif kind == "bullets":
            for item in b["items"]:
                _add_runs(document.add_paragraph(style="List Bullet"), inline_runs(item))
        elif kind == "numbered" and b.get("numbers"):
            # Numbered as the author wrote them (4, then 6): the numbers are text, with a
            # hanging indent as Word's own list has (automatic numbering would renumber them).
            for number, item in zip(b["numbers"], b["items"], strict=False):
                paragraph = document.add_paragraph()
                nested = number is None  # an item of a list inside a numbered item: a bullet under it
                paragraph.paragraph_format.left_indent = Cm(1.5 if nested else 0.75)
                paragraph.paragraph_format.first_line_indent = Cm(-0.75)
                _add_runs(paragraph, [Run("•\t" if nested else f"{number}.\t", False, False), *inline_runs(item)])
        elif kind == "numbered":
            numbered_lists += 1
            num_id = _restart_numbering(document, "List Number") if numbered_lists > 1 else None
            for item in b["items"]:
                paragraph = document.add_paragraph(style="List Number")
                if num_id:
                    _set_num(paragraph, num_id)
                _add_runs(paragraph, inline_runs(item))
        elif kind == "table":
            width = max([len(b["header"])] + [len(r) for r in b["rows"]])
            if not width:
                continue
            table = document.add_table(rows=1 + len(b["rows"]), cols=width)
            table.style = "Table Grid"
            for r, row in enumerate([b["header"], *b["rows"]]):
                for c in range(width):
                    cell_paragraph = table.cell(r, c).paragraphs[0]
                    _add_runs(cell_paragraph, inline_runs(row[c] if c < len(row) else ""), bold=r == 0)
    out = io.BytesIO()
    document.save(out)
    return stable_zip(out.getvalue())
