import io

import docx
import pypdf
import pytest

from authoring.rendering import RenderError, parse_content, render_file, structured_to_content
from tests.rendering.samples import CSV, MEMO


def test_docx_has_heading_styles_runs_lists_and_table():
    rendered = render_file("file", "docx", MEMO, {"author": "Jane Doe"}, path="Deal/IC memo.docx")
    assert rendered.filename == "IC memo.docx"
    assert rendered.content_type.endswith("wordprocessingml.document")
    document = docx.Document(io.BytesIO(rendered.data))
    paragraphs = [(p.style.name, p.text) for p in document.paragraphs]
    assert paragraphs[0] == ("Heading 1", "Project Falcon — Investment Committee Memo")
    assert ("Heading 2", "Key terms") in paragraphs
    assert ("List Bullet", "Enterprise value of €48.5m, 9.7x LTM EBITDA") in paragraphs
    assert [t for s, t in paragraphs if s == "List Number"] == [
        "Confirmatory diligence by 31 January", "Signing targeted for 15 February", "Closing after FCA change-of-control approval"]
    intro = document.paragraphs[1]
    assert [r.text for r in intro.runs if r.bold] == ["Investment Committee"]
    assert [r.text for r in intro.runs if r.italic] == ["5 January 2026"]
    table = document.tables[0]
    assert [c.text for c in table.rows[0].cells] == ["Item", "Owner", "Due"]
    assert [c.text for c in table.rows[2].cells] == ["SPA first draft", "Latham | London", "2026-01-23"]
    assert document.core_properties.title == "Project Falcon — Investment Committee Memo"
    assert document.core_properties.author == "Jane Doe"


def test_docx_second_numbered_list_restarts_at_one():
    data = render_file("file", "docx", "1. a\n2. b\n\nBetween.\n\n1. c\n", {}, path="x.docx").data
    paragraphs = [p for p in docx.Document(io.BytesIO(data)).paragraphs if p.style.name == "List Number"]
    first, second = paragraphs[0]._p.pPr.numPr, paragraphs[2]._p.pPr.numPr
    assert first is None  # the style's own numbering
    assert second is not None and second.numId.val  # a numbering of its own, started over


def test_office_and_pdf_renders_are_byte_identical():
    for fmt in ("docx", "pdf"):
        assert render_file("file", fmt, MEMO, {}, path=f"m.{fmt}").data == render_file("file", fmt, MEMO, {}, path=f"m.{fmt}").data


def test_pdf_text_extracts_including_non_latin_text():
    content = MEMO + "\nCyrillic: Сделка закрыта. Greek: Συμφωνία. Quotes: “ok” — fine.\n"
    rendered = render_file("file", "pdf", content, {}, path="Deal/IC memo")
    assert rendered.filename == "IC memo.pdf"
    text = "\n".join(page.extract_text() for page in pypdf.PdfReader(io.BytesIO(rendered.data)).pages)
    assert "Project Falcon — Investment Committee Memo" in text
    assert "Zoë Analytics" in text
    assert "Сделка закрыта" in text
    assert "Tax diligence" in text and "Deloitte" in text
    assert "**" not in text


def test_pdf_in_windows_1252_uses_a_standard_font_and_embeds_none():
    data = render_file("file", "pdf", MEMO, {}, path="m.pdf").data
    reader = pypdf.PdfReader(io.BytesIO(data))
    fonts = {font["/BaseFont"]: font for font in reader.pages[0]["/Resources"]["/Font"].values()}
    assert set(fonts) == {"/Helvetica", "/Helvetica-Bold", "/Helvetica-Oblique"}
    assert all("/FontFile2" not in font.get("/FontDescriptor", {}) for font in fonts.values())
    text = reader.pages[0].extract_text()
    assert "Project Falcon — Investment Committee Memo" in text and "€48,500,000" in text and "Zoë Analytics" in text
    assert "• Enterprise value of €48.5m" in text


def test_pdf_beyond_windows_1252_embeds_dejavu():
    data = render_file("file", "pdf", "# Сделка\n\nClosed.\n", {}, path="m.pdf").data
    fonts = pypdf.PdfReader(io.BytesIO(data)).pages[0]["/Resources"]["/Font"].values()
    assert all("DejaVu" in font["/BaseFont"] for font in fonts)


def test_pdf_without_a_unicode_font_replaces_what_windows_1252_cannot_hold(monkeypatch):
    from authoring.rendering import pdffile

    monkeypatch.setattr(pdffile, "DEJAVU", "/nonexistent")
    data = render_file("file", "pdf", "# Сделка “deal” — €5m\n", {}, path="x.pdf").data
    text = pypdf.PdfReader(io.BytesIO(data)).pages[0].extract_text()
    assert "?????? “deal” — €5m" in text


def test_markdown_file_is_the_content_itself():
    rendered = render_file("file", "md", MEMO, {}, path="Notes/memo.md")
    assert rendered.data.decode() == MEMO
    assert rendered.content_type.startswith("text/markdown")


def test_markdown_round_trip_content_structured_content():
    structured = parse_content("file", "docx", MEMO, {})
    types = [b["type"] for b in structured["blocks"]]
    assert types == ["heading", "paragraph", "heading", "paragraph", "heading", "bullets", "heading", "numbered", "table"]
    assert structured["blocks"][0] == {"type": "heading", "level": 1, "text": "Project Falcon — Investment Committee Memo",
                                       "items": [], "header": [], "rows": []}
    assert structured_to_content("file", "docx", structured) == MEMO
    assert parse_content("file", "md", structured_to_content("file", "md", structured), {}) == structured


def test_structured_round_trip_keeps_adjacent_lists_apart():
    def block(kind, items):
        return {"type": kind, "level": 0, "text": "", "items": items, "header": [], "rows": []}

    structured = {"blocks": [block("bullets", ["a", "b"]), block("bullets", ["c"]), block("numbered", ["d"]), block("numbered", ["e"])]}
    assert parse_content("file", "pdf", structured_to_content("file", "pdf", structured), {}) == structured


def test_csv_renders_rfc4180_and_round_trips():
    rendered = render_file("file", "csv", CSV, {}, path="Deal/parties.csv")
    assert rendered.data == b'Party,Role,Email\r\nAcme Holdings,Buyer,deals@acme.com\r\n"Zo\xc3\xab Analytics, Ltd",Target,cfo@zoe.io\r\n'
    structured = parse_content("file", "csv", CSV, {})
    assert structured["rows"][2] == ["Zoë Analytics, Ltd", "Target", "cfo@zoe.io"]
    assert parse_content("file", "csv", structured_to_content("file", "csv", structured), {}) == structured


def test_bad_csv_names_the_line():
    with pytest.raises(RenderError, match="line 2"):
        parse_content("file", "csv", 'a,b\n"unclosed,1\n', {})


def test_unknown_kind_or_format_is_a_render_error():
    with pytest.raises(RenderError, match="format"):
        render_file("file", "odt", "x", {}, path="x.odt")
