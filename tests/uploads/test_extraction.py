"""detect_format / extract on their own: the bounds, and the decisions about text."""

import csv
import io

import pytest

from authoring.extraction import detect_format, extract
from authoring.extraction.common import MAX_PDF_PAGES, MAX_SHEET_COLUMNS, MAX_SHEET_ROWS
from core.exceptions import ApplicationError
from core.sanitize import markdown_to_safe_html
from tests.uploads import builders


def _extract(data: bytes, name: str, **kwargs):
    return extract(data, detect_format(data, name), **kwargs)


def test_markup_inside_markdown_is_kept_as_text_and_rendered_inert():
    # Only files that *start* as a page/SVG are refused; markup further down is text,
    # and the page renders it through core.sanitize.
    data = b"# Notes\n\nSee <script>alert(1)</script> and <svg onload=alert(2)></svg>.\n"
    extracted = _extract(data, "notes.md")
    assert "<script>alert(1)</script>" in extracted.content
    html = markdown_to_safe_html(extracted.content)
    assert "<script" not in html and "<svg" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as the text it is


def test_text_that_merely_starts_with_mz_is_text_not_an_executable():
    assert detect_format(b"MZ Holdings: board minutes\n", "minutes.txt") == "txt"


def test_xlsx_rows_and_columns_are_capped_with_a_note():
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    for row in range(1, MAX_SHEET_ROWS + 11):
        sheet.cell(row=row, column=1, value=row)
    sheet.cell(row=1, column=MAX_SHEET_COLUMNS + 5, value="far right")
    buffer = io.BytesIO()
    workbook.save(buffer)
    extracted = _extract(buffer.getvalue(), "big.xlsx")
    assert f"| {MAX_SHEET_ROWS} | {MAX_SHEET_ROWS} |" in extracted.content
    assert f"| {MAX_SHEET_ROWS + 1} |" not in extracted.content
    assert "far right" not in extracted.content
    assert any("only the first 2,000 rows and 50 columns" in note for note in extracted.notes)
    assert "only the first" not in extracted.content  # (told in the version note: the content must still build)
    from authoring.rendering import render_file

    assert render_file("file", "xlsx", extracted.content, {}, path="big.xlsx").data


def test_pdf_pages_are_capped_with_a_note():
    extracted = _extract(builders.pdf_bytes([f"Page text {i}" for i in range(MAX_PDF_PAGES + 2)]), "long.pdf")
    assert f"## Page {MAX_PDF_PAGES}\n\nPage text {MAX_PDF_PAGES - 1}" in extracted.content
    assert f"## Page {MAX_PDF_PAGES + 1}" not in extracted.content
    assert f"Only the first {MAX_PDF_PAGES} of {MAX_PDF_PAGES + 2} pages" in extracted.content


def test_a_password_protected_pdf_is_refused_but_an_owner_only_one_is_read():
    from fpdf import FPDF

    def encrypted(user_password):
        pdf = FPDF()
        pdf.set_encryption(owner_password="owner", user_password=user_password)
        pdf.set_font("Helvetica", size=12)
        pdf.add_page()
        pdf.cell(0, 10, "Confidential terms")
        return bytes(pdf.output())

    with pytest.raises(ApplicationError, match="password-protected"):
        _extract(encrypted("secret"), "locked.pdf")
    assert "Confidential terms" in _extract(encrypted(""), "open.pdf").content


def test_a_long_csv_is_cut_at_a_record_and_stays_valid_csv():
    rows = [["id", "note"]] + [[str(i), f"line one {i}\nline two, quoted"] for i in range(20_000)]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    extracted = _extract(buffer.getvalue().encode(), "notes.csv", max_chars=50_000)
    assert len(extracted.content) <= 50_000
    parsed = list(csv.reader(io.StringIO(extracted.content, newline=""), strict=True))
    assert parsed[0] == ["id", "note"] and parsed[1] == ["0", "line one 0\nline two, quoted"]
    assert all(len(row) == 2 for row in parsed[:-1])
    assert parsed[-1][0].startswith("[Truncated")


def test_an_unknown_date_zone_is_kept_as_utc():
    data = b"From: a@example.test\nTo: b@example.test\nDate: Thu, 26 Feb 2026 09:14:00 -0000\nSubject: Hi\n\nBody\n"
    extracted = _extract(data, "a.eml")
    assert extracted.metadata["date"] == "2026-02-26T09:14:00+00:00"
    assert extracted.content == "Body\n"


def test_entity_expansion_in_an_office_package_is_refused():
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><Types>&b;</Types>'
    data = builders.rewrite_entry(builders.docx_bytes(), "[Content_Types].xml", lambda _: bomb)
    with pytest.raises(ApplicationError, match="package description cannot be read"):
        detect_format(data, "lol.docx")


def test_pptx_tables_and_grouped_shapes_are_read():
    import pptx
    from pptx.util import Inches

    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Terms"
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (row, col), text in {(0, 0): "Term", (0, 1): "Value", (1, 0): "Price", (1, 1): "$12m"}.items():
        table.cell(row, col).text = text
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(4), Inches(2), Inches(1)).text_frame.text = "Grouped remark"
    buffer = io.BytesIO()
    presentation.save(buffer)
    content = _extract(buffer.getvalue(), "terms.pptx").content
    assert content == "## Terms\n\n| Term | Value |\n|---|---|\n| Price | $12m |\n\n- Grouped remark\n"


def test_xlsx_number_formats_are_kept_as_the_sheets_formats_line():
    """An uploaded 0.0% showed as 0.6 in the grid and downloaded as General. The formats now
    come in as the sheet's Formats line (runs down a column as one range), and the rebuilt
    workbook has them; a sectioned format the line cannot hold is reported, not dropped quietly."""
    import openpyxl

    from authoring.rendering import render_file

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["Holder", "Share", "Amount", "Net"])
    for name, share, amount in (("Acme", 0.6, 1200.5), ("Beta", 0.4, 800)):
        sheet.append([name, share, amount, -5])
    for row in (2, 3):
        sheet.cell(row=row, column=2).number_format = "0.0%"
        sheet.cell(row=row, column=4).number_format = "#,##0;[Red]-#,##0"
    sheet.cell(row=2, column=3).number_format = "#,##0.00"
    buffer = io.BytesIO()
    workbook.save(buffer)
    extracted = _extract(buffer.getvalue(), "cap.xlsx")
    assert "Formats: B2:B3 0.0%; C2 #,##0.00" in extracted.content
    assert any("the number formats of D2:D3 have sections" in note for note in extracted.notes)
    rebuilt = openpyxl.load_workbook(io.BytesIO(render_file("file", "xlsx", extracted.content, {}, path="cap.xlsx").data))
    assert rebuilt.active["B2"].number_format == "0.0%" and rebuilt.active["C2"].number_format == "#,##0.00"
