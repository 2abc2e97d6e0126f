"""Real files built with the libraries that write them (no binary fixtures in the repo),
and hostile zips built byte by byte."""

import datetime as dt
import io
import struct
import zipfile
from email.message import EmailMessage
from email.utils import format_datetime

MIB = 1024 * 1024


def docx_bytes() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Share purchase agreement", level=1)
    document.add_heading("Price", level=2)
    paragraph = document.add_paragraph("The buyer pays ")
    paragraph.add_run("$12m").bold = True
    paragraph.add_run(" at closing.")
    document.add_paragraph("Escrow of 10% for 18 months", style="List Bullet")
    document.add_paragraph("Closing on 31 March 2026", style="List Number")
    table = document.add_table(rows=3, cols=2)
    for row, values in zip(table.rows, [("Party", "Role"), ("Acme Corp", "Buyer"), ("Beta | Ltd", "Seller")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def xlsx_bytes() -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Cap table"
    sheet.append(["Holder", "Shares"])
    sheet.append(["Founders", 6000000])
    sheet.append(["Investors", 4000000])
    sheet["A4"] = "Total"
    sheet["B4"] = "=SUM(B2:B3)"
    workbook.create_sheet("Notes")["A1"] = "Fully diluted"
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def pptx_bytes() -> bytes:
    import pptx

    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])  # title and content
    slide.shapes.title.text = "Deal overview"
    body = slide.placeholders[1].text_frame
    body.text = "Price $12m"
    sub = body.add_paragraph()
    sub.text = "Paid in cash"
    sub.level = 1
    slide.notes_slide.notes_text_frame.text = "Stress the escrow."
    second = presentation.slides.add_slide(presentation.slide_layouts[5])  # title only
    second.shapes.title.text = "Next steps"
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def pdf_bytes(pages: list[str]) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 10, text)
    return bytes(pdf.output())


def eml_bytes(*, html_only: bool = False) -> bytes:
    message = EmailMessage()
    message["From"] = "Hannah Cole <hannah.cole@beta.example>"
    message["To"] = "Priya Raman <p.raman@harlow.example>, Ben Osei <ben@harlow.example>"
    message["Cc"] = "Dana Okafor <dana@beta.example>"
    message["Subject"] = "RE: Northwind MSA"
    message["Date"] = format_datetime(dt.datetime(2026, 2, 26, 9, 14, tzinfo=dt.timezone(dt.timedelta(hours=1))))
    if html_only:
        message.set_content(
            "<html><head><style>p{color:red}</style><script>alert(1)</script></head>"
            "<body><p>Clause <b>14.2</b> allows termination &amp; more.</p><img src=x onerror=alert(2)></body></html>",
            subtype="html",
        )
    else:
        message.set_content("Priya,\n\nClause 14.2 allows termination on a change of control.\n\nHannah\n")
        message.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="MSA.pdf")
    return message.as_bytes()


def exe_bytes() -> bytes:
    header = bytearray(b"MZ" + b"\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00" + b"\x00" * 44)
    header += struct.pack("<I", 0x80)
    header += b"\x0e\x1f\xba\x0e\x00\xb4\x09\xcd\x21This program cannot be run in DOS mode.\r\r\n$"
    header = header.ljust(0x80, b"\x00") + b"PE\x00\x00" + b"\x00" * 200
    return bytes(header)


def zip_bytes(entries: dict[str, bytes] | list[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    items = entries.items() if isinstance(entries, dict) else entries
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in items:
            archive.writestr(name, data)
    return buffer.getvalue()


def zip_of_zeros(name: str, size: int) -> bytes:
    """One entry of `size` zero bytes, streamed so the test never holds it in memory."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, archive.open(name, "w", force_zip64=True) as entry:
        block = b"\x00" * MIB
        for _ in range(size // MIB):
            entry.write(block)
        entry.write(b"\x00" * (size % MIB))
    return buffer.getvalue()


def office_bomb(size: int) -> bytes:
    """A docx whose main part is a run of zeros: the package looks right, the part is a bomb."""
    real = zipfile.ZipFile(io.BytesIO(docx_bytes()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in real.infolist():
            if info.filename != "word/document.xml":
                archive.writestr(info.filename, real.read(info))
        with archive.open("word/document.xml", "w", force_zip64=True) as entry:
            for _ in range(size // MIB):
                entry.write(b"\x00" * MIB)
    return buffer.getvalue()


def with_flag(data: bytes, bit: int) -> bytes:
    """Set a general-purpose flag bit on every entry, in local and central headers (zipfile
    itself resets the flags when writing)."""
    data = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        while at >= 0:
            (flags,) = struct.unpack_from("<H", data, at + offset)
            struct.pack_into("<H", data, at + offset, flags | bit)
            at = data.find(signature, at + 4)
    return bytes(data)


def with_declared_size(data: bytes, size: int) -> bytes:
    """Make every entry lie about its uncompressed size (local and central headers)."""
    data = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        while at >= 0:
            struct.pack_into("<I", data, at + offset, size)
            at = data.find(signature, at + 4)
    return bytes(data)


def rewrite_entry(data: bytes, name: str, transform) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            content = source.read(info)
            archive.writestr(info.filename, transform(content) if info.filename == name else content)
    return buffer.getvalue()
