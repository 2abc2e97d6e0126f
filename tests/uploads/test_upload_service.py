import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import Http404

from authoring.models import Document, DocumentVersion, VersionSource
from authoring.services import documents
from authoring.services.uploads import MAX_UPLOAD_BYTES, document_upload
from core.exceptions import ApplicationError
from tests.uploads import builders

STORED_NAME = re.compile(r"^uploads/\d{4}/\d{2}/[0-9a-f]{32}\.(docx|xlsx|pptx|pdf|eml|csv|md|txt)$")


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def stored_files(media) -> list:
    return [p for p in media.rglob("*") if p.is_file()] if media.exists() else []


def upload(world, user, name: str, data: bytes, path: str = "", content_type: str = "application/octet-stream") -> Document:
    return document_upload(world=world, user=user, uploaded_file=SimpleUploadedFile(name, data, content_type), path=path)


def assert_kept(document: Document, media, data: bytes, source_name: str) -> None:
    """The original is stored under a name we chose, with the bytes as uploaded."""
    assert STORED_NAME.match(document.source_file.name), document.source_file.name
    assert source_name not in document.source_file.name
    assert (media / document.source_file.name).read_bytes() == data
    assert document.source_name == source_name
    version = document.versions.get()
    assert (version.number, version.source, version.content) == (1, VersionSource.UPLOADED, document.content)
    assert version.created_by_id == document.updated_by_id


# --- every supported format, end to end ------------------------------------------------

def test_docx_becomes_markdown_with_headings_lists_and_tables(team, world, media):
    data = builders.docx_bytes()
    document = upload(world, team.author, "Share purchase agreement.docx", data)
    assert (document.path, document.kind, document.format, document.status) == (
        "Uploads/Share purchase agreement.docx",
        "file",
        "docx",
        "edited",
    )
    assert document.content.startswith("# Share purchase agreement\n\n## Price\n\nThe buyer pays **$12m** at closing.")
    assert "- Escrow of 10% for 18 months\n1. Closing on 31 March 2026" in document.content
    assert "| Party | Role |\n|---|---|\n| Acme Corp | Buyer |\n| Beta \\| Ltd | Seller |" in document.content
    assert_kept(document, media, data, "Share purchase agreement.docx")


def test_a_docx_page_header_and_footer_are_kept_not_dropped(team, world, media):
    import io

    import docx

    made = docx.Document()
    made.sections[0].header.paragraphs[0].text = "CONFIDENTIAL — Buyer's draft"
    made.sections[0].footer.paragraphs[0].text = "Ref. ACME/BETA/SPA/01"
    made.add_paragraph("The buyer pays $12m.")
    made.add_section()
    made.add_paragraph("Schedule 1.")  # a second section repeats the same header: one line, not two
    data = io.BytesIO()
    made.save(data)
    document = upload(world, team.author, "SPA.docx", data.getvalue())
    assert document.content == "CONFIDENTIAL — Buyer's draft\n\nThe buyer pays $12m.\n\nSchedule 1.\n\nRef. ACME/BETA/SPA/01\n"
    assert "is kept as the first and last paragraphs" in document.versions.get().note


def test_xlsx_keeps_sheets_and_formulas(team, world, media):
    data = builders.xlsx_bytes()
    document = upload(world, team.author, "cap.xlsx", data)
    assert document.format == "xlsx"
    assert document.content.startswith("## Sheet: Cap table\n\n|  | A | B |\n|---|---|---|\n| 1 | Holder | Shares |")
    assert "| 4 | Total | =SUM(B2:B3) |" in document.content
    assert "## Sheet: Notes" in document.content and "| 1 | Fully diluted |" in document.content
    assert_kept(document, media, data, "cap.xlsx")


def test_pptx_gives_one_heading_per_slide_with_bullets_and_notes(team, world, media):
    data = builders.pptx_bytes()
    document = upload(world, team.author, "deck.pptx", data)
    assert document.format == "pptx"
    assert document.content == "## Deal overview\n\n- Price $12m\n  - Paid in cash\n\nNotes: Stress the escrow.\n\n## Next steps\n"
    assert_kept(document, media, data, "deck.pptx")


def test_pdf_gives_the_text_of_each_page(team, world, media):
    data = builders.pdf_bytes(["The purchase price is 12 million dollars.", "Closing is on 31 March 2026."])
    document = upload(world, team.author, "scan.pdf", data)
    assert document.format == "pdf"
    assert "## Page 1\n\nThe purchase price is 12 million dollars." in document.content
    assert "## Page 2\n\nClosing is on 31 March 2026." in document.content
    assert_kept(document, media, data, "scan.pdf")


def test_eml_headers_become_metadata_and_the_body_content(team, world, media):
    data = builders.eml_bytes()
    document = upload(world, team.author, "re-msa.eml", data)
    assert (document.kind, document.format, document.path) == ("email", "", "Uploads/re-msa.eml")
    assert document.metadata == {
        "from": "Hannah Cole <hannah.cole@beta.example>",
        "to": "Priya Raman <p.raman@harlow.example>, Ben Osei <ben@harlow.example>",
        "cc": "Dana Okafor <dana@beta.example>",
        "subject": "RE: Northwind MSA",
        "date": "2026-02-26T09:14:00+01:00",
    }
    assert document.content == "Priya,\n\nClause 14.2 allows termination on a change of control.\n\nHannah\n"
    assert "MSA.pdf" in document.versions.get().note  # the attachment is named, not imported
    assert_kept(document, media, data, "re-msa.eml")


def test_an_html_only_email_is_reduced_to_text(team, world, media):
    document = upload(world, team.author, "mail.eml", builders.eml_bytes(html_only=True))
    assert document.content == "Clause 14.2 allows termination & more.\n"
    assert "<" not in document.content and "alert" not in document.content


def test_an_email_saved_as_txt_is_still_an_email(team, world, media):
    document = upload(world, team.author, "saved.txt", builders.eml_bytes())
    assert (document.kind, document.path) == ("email", "Uploads/saved.eml")


def test_csv_is_kept_as_csv_text(team, world, media):
    data = b'Holder,Shares\r\nFounders,6000000\r\n"Investors, Series A",4000000\r\n'
    document = upload(world, team.author, "cap.csv", data)
    assert (document.format, document.path) == ("csv", "Uploads/cap.csv")
    assert document.content == 'Holder,Shares\nFounders,6000000\n"Investors, Series A",4000000\n'
    assert_kept(document, media, data, "cap.csv")


def test_markdown_and_text_become_markdown(team, world, media):
    markdown = upload(world, team.author, "notes.md", b"# Notes\n\n- Price is **$12m**\n")
    assert (markdown.format, markdown.content, markdown.path) == ("md", "# Notes\n\n- Price is **$12m**\n", "Uploads/notes.md")
    text = upload(world, team.author, "todo.txt", b"Call the bank.\n")
    assert (text.format, text.content, text.path) == ("md", "Call the bank.\n", "Uploads/todo.md")
    assert text.source_file.name.endswith(".txt") and text.source_name == "todo.txt"


def test_windows_1252_text_is_read_with_a_note(team, world, media):
    document = upload(world, team.author, "old.txt", "Café – price €12m".encode("cp1252"))
    assert document.content == "Café – price €12m\n"
    assert "Windows-1252" in document.versions.get().note


def test_long_text_is_truncated_with_a_note(team, world, media):
    data = ("word " * 20 + "\n").encode() * 6000  # 606,000 characters
    document = upload(world, team.author, "long.md", data)
    assert len(document.content) <= documents.MAX_CONTENT_CHARS
    assert document.content.rstrip().endswith("the rest is only in the uploaded original.]")
    assert "Truncated" in document.versions.get().note
    assert (media / document.source_file.name).read_bytes() == data  # the original is whole


# --- names and paths -------------------------------------------------------------------

def test_client_names_are_cleaned_and_never_used_for_storage(team, world, media):
    data = builders.pdf_bytes(["x"])
    document = upload(world, team.author, "..\\..\\C:\\evil/..\\Report\u202egpj.\x00\x07 <Q3>.pdf", data)
    assert document.source_name == "Reportgpj. _Q3_.pdf"
    assert document.path == "Uploads/Reportgpj. _Q3_.pdf"
    assert STORED_NAME.match(document.source_file.name)


def test_the_path_extension_follows_the_detected_format(team, world, media):
    # A PDF named .docx is a PDF: its data-room path says so.
    document = upload(world, team.author, "contract.docx", builders.pdf_bytes(["x"]))
    assert (document.format, document.path, document.source_name) == ("pdf", "Uploads/contract.pdf", "contract.docx")
    assert document.source_file.name.endswith(".pdf")


def test_paths_given_by_the_author(team, world, media):
    assert upload(world, team.author, "a.md", b"a", path="Deal/").path == "Deal/a.md"
    assert upload(world, team.author, "b.md", b"b", path="Deal/Summary").path == "Deal/Summary.md"
    assert upload(world, team.author, "c.md", b"c", path="Deal/Other.md").path == "Deal/Other.md"
    with pytest.raises(ApplicationError, match=r"use a path ending in \.md"):
        upload(world, team.author, "d.md", b"d", path="Deal/Wrong.pdf")
    with pytest.raises(ApplicationError, match="not a valid data-room path"):
        upload(world, team.author, "e.md", b"e", path="../outside.md")
    assert len(stored_files(media)) == 3


def test_the_same_name_uploaded_twice_keeps_both(team, world, media):
    first = upload(world, team.author, "notes.md", b"one")
    second = upload(world, team.author, "notes.md", b"two")
    assert (first.path, second.path) == ("Uploads/notes.md", "Uploads/notes (2).md")
    assert first.source_file.name != second.source_file.name


def test_a_failed_transaction_removes_the_stored_file(team, world, media):
    upload(world, team.author, "x.md", b"first", path="Deal/X.md")
    with pytest.raises(ApplicationError, match=r"already a document at 'Deal/X\.md'"):
        upload(world, team.author, "y.md", b"second", path="Deal/X.md")
    assert len(stored_files(media)) == 1
    assert Document.objects.filter(world=world, path="Deal/X.md").get().content == "first\n"


# --- refusals: a clear message, nothing created ---------------------------------------

def _ooxml_main_type(old: bytes, new: bytes):
    return lambda data: data.replace(old, new)


REFUSALS = [
    ("zip-bomb", "big.docx", lambda: builders.office_bomb(60 * 1024 * 1024), "expands to 60 MB; one entry may be at most 50 MB"),
    ("ratio-bomb", "big.docx", lambda: builders.office_bomb(3 * 1024 * 1024), "looks like a zip bomb"),
    ("traversal", "evil.docx", lambda: builders.zip_bytes({"../../evil": b"x", "[Content_Types].xml": b"<x/>"}),
     "points outside the archive"),
    ("absolute", "evil.xlsx", lambda: builders.zip_bytes({"/etc/passwd": b"x"}), "absolute path"),
    ("symlink", "evil.pptx", lambda: builders.zip_bytes([(_symlink_info(), b"/etc/passwd")]), "symbolic link"),
    ("too-many-entries", "many.docx", lambda: builders.zip_bytes({f"word/media/{i}.png": b"" for i in range(1001)}), "at most 1,000"),
    ("plain-zip", "data.docx", lambda: builders.zip_bytes({"a.txt": b"x"}), "is a zip archive, not a Word"),
    ("macro-enabled", "macros.docx", lambda: builders.rewrite_entry(
        builders.docx_bytes(), "[Content_Types].xml",
        _ooxml_main_type(b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
                         b"application/vnd.ms-word.document.macroEnabled.main+xml"),
    ), r"macro-enabled Word document \(.docm\)"),
    ("html-as-docx", "report.docx", lambda: b"<!DOCTYPE html><html><script>alert(1)</script></html>", "web page, SVG image or XML"),
    ("svg-as-md", "logo.md", lambda: b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>', "web page, SVG image or XML"),
    ("xml-svg-as-txt", "a.txt", lambda: b'\xef\xbb\xbf  <?xml version="1.0"?>\n<svg/>', "web page, SVG image or XML"),
    ("exe-as-pdf", "invoice.pdf", builders.exe_bytes, r"content is application/x-msdownload \(exe\), whatever its name says"),
    ("png-as-md", "notes.md", lambda: b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, r"content is image/png \(png\)"),
    ("legacy-doc", "old.docx", lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 500, "legacy Office file"),
    ("binary", "blob.txt", lambda: b"abc\x00\x01\x02", "binary file"),
    ("not-utf8", "x.txt", lambda: b"\x81\x8d\x8f\x90\x9d", "neither UTF-8 nor Windows-1252"),
    ("utf16", "x.txt", lambda: "hello".encode("utf-16"), "UTF-16"),
    ("bad-csv", "x.csv", lambda: b'a,"b\nc,d', "not valid CSV"),
    ("eml-without-headers", "x.eml", lambda: b"just some words\n", "no email headers"),
    ("empty", "x.md", lambda: b"", "The file is empty"),
    ("damaged-pdf", "x.pdf", lambda: b"%PDF-1.4\nnothing else", "could not be read"),
    ("damaged-docx", "x.docx", lambda: builders.rewrite_entry(builders.docx_bytes(), "word/document.xml", lambda d: d[:200]),
     "could not be read"),
]


def _symlink_info():
    import zipfile

    info = zipfile.ZipInfo("ppt/presentation.xml")
    info.create_system = 3
    info.external_attr = 0o120777 << 16
    return info


@pytest.mark.parametrize(("name", "build", "message"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_bad_uploads_are_refused_and_leave_nothing_behind(team, world, media, name, build, message):
    before = Document.objects.count()
    with pytest.raises(ApplicationError, match=message) as refused:
        upload(world, team.author, name, build())
    assert "Accepted: Word (.docx)" in refused.value.message
    assert Document.objects.count() == before
    assert not DocumentVersion.objects.filter(source=VersionSource.UPLOADED).exists()
    assert stored_files(media) == []


def test_an_oversize_upload_is_refused_before_it_is_read(team, world, media):
    with pytest.raises(ApplicationError, match="larger than 20 MB"):
        upload(world, team.author, "big.md", b"a" * (MAX_UPLOAD_BYTES + 1))
    assert stored_files(media) == [] and not world.documents.filter(path__startswith="Uploads/").exists()


def test_a_full_world_refuses_uploads(team, world, media):
    room = documents.MAX_DOCUMENTS_PER_WORLD - world.documents.count()
    Document.objects.bulk_create(Document(world=world, path=f"Filler/{i}.md", format="md") for i in range(room))
    with pytest.raises(ApplicationError, match="at most 5,000 documents"):
        upload(world, team.author, "one-more.md", b"x")
    assert stored_files(media) == []


def test_a_reviewer_cannot_upload(team, world, media):
    with pytest.raises(ApplicationError, match=r"\(reviewer\) cannot edit content"):
        upload(world, team.reviewer, "notes.md", b"x")
    assert stored_files(media) == [] and not world.documents.filter(path__startswith="Uploads/").exists()


def test_an_outsider_gets_a_404(other_team, world, media):
    with pytest.raises(Http404):
        upload(world, other_team.author, "notes.md", b"x")
    assert stored_files(media) == [] and not world.documents.filter(path__startswith="Uploads/").exists()
