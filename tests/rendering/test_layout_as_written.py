"""A document is laid out as its author wrote it, in every form it takes: a contract's
clause numbers stay theirs (4, then 6; CommonMark alone renumbers a list 4, 5 and python-docx's
automatic numbering made it 1, 2), and its lines stay lines (two definitions on two lines,
sub-clauses (a) (b) (c) each on its own line)."""

import io

import docx
import pypdf

from authoring.rendering.markdown import blocks_to_markdown, parse_blocks
from authoring.rendering.pdffile import render_pdf
from authoring.rendering.wordfile import render_docx
from core.sanitize import document_markdown_to_safe_html, markdown_to_safe_html

SPA = """SHARE PURCHASE AGREEMENT

1.1 "Indebtedness" includes all amounts outstanding under the Facility.
1.2 "Price" means the amount in clause 3.1.

4. CONDITIONS
4.1 Completion is conditional on:
  (a) the consent of the landlord;
  (b) the waiver by Northwind.

6. PAYMENT AT COMPLETION
6.2 The Buyer shall pay the Indebtedness in full.

Steps:

1. A list numbered from one
2. stays an ordinary list
"""


def test_the_docx_keeps_the_clause_numbers_and_the_lines():
    paragraphs = [p.text for p in docx.Document(io.BytesIO(render_docx(parse_blocks(SPA)["blocks"]))).paragraphs]
    assert paragraphs[1] == ('1.1 "Indebtedness" includes all amounts outstanding under the Facility.\n'
                             '1.2 "Price" means the amount in clause 3.1.')
    assert paragraphs[2] == ("4.\tCONDITIONS\n4.1 Completion is conditional on:\n"
                             "(a) the consent of the landlord;\n(b) the waiver by Northwind.")
    assert paragraphs[3].startswith("6.\tPAYMENT AT COMPLETION\n6.2 ")
    assert paragraphs[5:] == ["A list numbered from one", "stays an ordinary list"]  # Word's own numbering, from 1


def test_the_pdf_and_the_preview_agree():
    text = pypdf.PdfReader(io.BytesIO(render_pdf(parse_blocks(SPA)["blocks"]))).pages[0].extract_text()
    assert "4. CONDITIONS\n4.1 Completion is conditional on:\n(a) the consent of the landlord;\n(b) the waiver" in text
    assert "6. PAYMENT AT COMPLETION" in text and "5. PAYMENT" not in text
    html = str(document_markdown_to_safe_html(SPA))
    assert '<li value="4">' in html and '<li value="6">' in html and '1.1 "Indebtedness"' in html
    assert "the Facility.<br>\n1.2" in html
    # Comments and prompts keep ordinary markdown: a line break there is a space.
    assert "<br>" not in str(markdown_to_safe_html("one\ntwo"))


def test_markdown_written_back_from_the_blocks_reads_the_same():
    blocks = parse_blocks(SPA)["blocks"]
    assert [b.get("numbers") for b in blocks if b["type"] == "numbered"] == [[4, 6], None]
    assert parse_blocks(blocks_to_markdown(blocks))["blocks"] == blocks


def test_a_list_nested_in_a_numbered_item_numbers_nothing():
    """'4. Conditions' with two bullets under it, then '6. Payment': the bullets stay bullets
    under clause 4, and no number is printed twice (the flattened list read 4, 5, 6, 6)."""
    blocks = parse_blocks("4. Conditions\n   - consent of the landlord\n   - waiver by Northwind\n6. Payment\n")["blocks"]
    assert blocks[0]["numbers"] == [4, None, None, 6]
    paragraphs = [p.text for p in docx.Document(io.BytesIO(render_docx(blocks))).paragraphs]
    assert paragraphs == ["4.\tConditions", "•\tconsent of the landlord", "•\twaiver by Northwind", "6.\tPayment"]
    text = pypdf.PdfReader(io.BytesIO(render_pdf(blocks))).pages[0].extract_text()
    assert "5." not in text and text.count("6.") == 1
    assert parse_blocks(blocks_to_markdown(blocks))["blocks"] == blocks
