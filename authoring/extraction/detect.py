"""Deciding what an upload is from its bytes, never from its name.

- `%PDF-` at byte 0 is a PDF; `PK\\x03\\x04` is a zip, which is checked (core.archives)
  and then accepted only as the Word / Excel / PowerPoint document its package says it
  is: the main part named by `_rels/.rels` and its content type in `[Content_Types].xml`.
  Macro-enabled, template and legacy (OLE) office files are refused.
- Any other recognised binary signature (executables, images, archives …) is refused.
- The rest must be text: UTF-8 (a BOM is allowed) or, failing that, Windows-1252 (the
  encoding old Windows tools write; extraction says it re-encoded the file).
- Text that *starts* like a web page, SVG or XML (the byte patterns browsers use to sniff
  HTML and XML) is refused outright, even as .md or .txt. Such a file is markup, not a
  document, and refusing it costs no real upload, while keeping it would leave a file
  that any server or tool that sniffs types could render as a page. Markup further down
  a Markdown or text file is kept as text: it is shown through core.sanitize (raw HTML
  disabled, then an allow-list), so it renders inert.
- Among text, the name only chooses between formats the content supports: a calendar
  (BEGIN:VCALENDAR) is a calendar whatever its name, and `.ics` must be one; a mailbox
  (mbox: "From " envelope lines before email headers) is one when named .mbox or holding
  several messages; an email (RFC 5322 headers with From and To/Subject/Date) is an
  email whatever its name; a `.csv` must parse as CSV; `.eml` must have email headers;
  the rest is Markdown/text.
"""

import csv
import io
import re
import zipfile
from pathlib import PurePosixPath

import filetype
from defusedxml import ElementTree

from authoring.extraction.common import MIB, OFFICE_ZIP_LIMITS, refuse
from core.archives import check_zip, safe_member_read
from core.exceptions import ApplicationError

OFFICE_TYPES = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml": "pptx",
}
OTHER_OFFICE_TYPES = {
    "application/vnd.ms-word.document.macroenabled.main+xml": "a macro-enabled Word document (.docm)",
    "application/vnd.ms-excel.sheet.macroenabled.main+xml": "a macro-enabled Excel workbook (.xlsm)",
    "application/vnd.ms-powerpoint.presentation.macroenabled.main+xml": "a macro-enabled PowerPoint deck (.pptm)",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml": "a Word template (.dotx)",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.template.main+xml": "an Excel template (.xltx)",
    "application/vnd.openxmlformats-officedocument.presentationml.template.main+xml": "a PowerPoint template (.potx)",
    "application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml": "a PowerPoint show (.ppsx)",
    "application/vnd.ms-excel.sheet.binary.macroenabled.main": "a binary Excel workbook (.xlsb)",
}
OFFICE_DOCUMENT_RELATIONSHIPS = {
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument",
    "http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument",
}
_PACKAGE_XML_LIMIT = 1 * MIB
_CT = "{http://schemas.openxmlformats.org/package/2006/content-types}"
_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"

TEXT_SNIFF_BYTES = 64 * 1024
# After optional whitespace, what browsers take for HTML (WHATWG MIME sniffing, "rules
# for identifying an unknown MIME type") plus SVG/XML and a few other active elements.
_MARKUP_START = re.compile(
    r"<(?:!--|!doctype|\?xml|(?:html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p"
    r"|svg|math|object|embed|meta|link|form|img|base|template|frameset|frame)(?=[\s>/]|$))",
    re.IGNORECASE,
)
_HEADER_LINE = re.compile(r"^[!-9;-~]+:")
_CALENDAR_START = re.compile(r"BEGIN:VCALENDAR\r?\n", re.IGNORECASE)
# An mbox separates messages with a "From " line (the envelope) right before the headers.
_MBOX_SEPARATOR = re.compile(r"^From \S.*\n(?=[!-9;-~]+:)", re.MULTILINE)


def detect_format(data: bytes, filename: str) -> str:
    """The upload's format, decided from its content: one of docx, xlsx, pptx, pdf, eml,
    mbox, ics, csv, md, txt. Raises ApplicationError saying what the file is and what is accepted."""
    if not data:
        raise refuse("The file is empty.")
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _office_format(data)
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        raise refuse("This is a legacy Office file (.doc, .xls or .ppt); save it as .docx, .xlsx or .pptx and upload that.")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise refuse("This text file is UTF-16; save it as UTF-8 and upload it again.")
    head = data[:TEXT_SNIFF_BYTES]
    guess = filetype.guess(head)
    # "MZ" is filetype's whole test for an executable, and a text may start with it; a
    # real executable always has NUL bytes in its header.
    if guess is not None and (guess.extension != "exe" or b"\x00" in head):
        raise refuse(f"This file's content is {guess.mime} ({guess.extension}), whatever its name says.")
    if b"\x00" in data:
        raise refuse("This is a binary file of a type Taskwright does not read.")
    text, _ = decode_text(data)
    if _MARKUP_START.match(text.lstrip(" \t\n\r\f")):
        raise refuse("This file is a web page, SVG image or XML, which is never accepted (even named .md or .txt).")
    suffix = PurePosixPath(filename.replace("\\", "/")).suffix.lower()
    if _CALENDAR_START.match(text.lstrip("\ufeff \t\r\n")):
        return "ics"
    if suffix == ".ics":
        raise refuse("This file is named .ics but is not a calendar (it does not start with BEGIN:VCALENDAR).")
    if looks_like_mailbox(text, suffix):
        return "mbox"
    if suffix == ".csv":
        check_csv(text)
        return "csv"
    if looks_like_email(text):
        return "eml"
    if suffix == ".eml":
        raise refuse("This file is named .eml but has no email headers (From, To, Subject, Date).")
    return "md" if suffix in (".md", ".markdown") else "txt"


def decode_text(data: bytes) -> tuple[str, str | None]:
    """(text, note): UTF-8, else Windows-1252 with a note saying so."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "The file was not UTF-8; it was read as Windows-1252 (Western European)."
    except UnicodeDecodeError:
        raise refuse("This text file is neither UTF-8 nor Windows-1252; save it as UTF-8 and upload it again.") from None


def looks_like_email(text: str) -> bool:
    """RFC 5322 headers up to the first blank line, with From and at least one of To,
    Subject or Date. (An optional mbox "From " line may come first.)"""
    lines = text[:TEXT_SNIFF_BYTES].split("\n")
    if lines and lines[0].startswith("From "):
        lines = lines[1:]
    names = set()
    for line in lines[:500]:
        line = line.rstrip("\r")
        if not line:
            break
        if line[0] in " \t" and names:
            continue
        if not _HEADER_LINE.match(line):
            return False
        names.add(line.split(":", 1)[0].lower())
    else:
        return False
    return "from" in names and bool(names & {"to", "subject", "date"})


def looks_like_mailbox(text: str, suffix: str) -> bool:
    """An mbox: starts with a "From " envelope line and an email's headers, and is named
    .mbox or holds more than one message (one message with an envelope is just an email)."""
    text = text.replace("\r\n", "\n")
    if not text.startswith("From ") or not looks_like_email(text):
        return False
    return suffix == ".mbox" or len(_MBOX_SEPARATOR.findall(text)) > 1


def check_csv(text: str) -> None:
    try:
        for _ in csv.reader(io.StringIO(text, newline=""), strict=True):
            pass
    except csv.Error as exc:
        raise refuse(f"This file is named .csv but is not valid CSV ({exc}).") from None


def _office_format(data: bytes) -> str:
    try:
        check_zip(data, **OFFICE_ZIP_LIMITS)  # before any entry is read, here or by a library
    except ApplicationError as exc:
        raise refuse(exc.message) from None
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise refuse(f"This zip file is damaged ({exc}).") from None
    with archive:
        names = {name.lower(): name for name in archive.namelist()}
        if "mimetype" in names and "[content_types].xml" not in names:
            raise refuse("This is an OpenDocument file (.odt, .ods or .odp); save it as .docx, .xlsx or .pptx and upload that.")
        if "[content_types].xml" not in names or "_rels/.rels" not in names:
            raise refuse("This is a zip archive, not a Word, Excel or PowerPoint document.")
        try:
            rels = ElementTree.fromstring(safe_member_read(archive, names["_rels/.rels"], _PACKAGE_XML_LIMIT))
            types = ElementTree.fromstring(safe_member_read(archive, names["[content_types].xml"], _PACKAGE_XML_LIMIT))
        except ApplicationError as exc:
            raise refuse(exc.message) from None
        except Exception:  # any XML error, including defusedxml's refusals of entities
            raise refuse("This office file is damaged: its package description cannot be read.") from None
        main = None
        for rel in rels.iter(f"{_RELS}Relationship"):
            if rel.get("Type") in OFFICE_DOCUMENT_RELATIONSHIPS and rel.get("TargetMode", "Internal") == "Internal":
                main = (rel.get("Target") or "").lstrip("/")
                break
        if not main or main.lower() not in names:
            raise refuse("This zip file has no Word, Excel or PowerPoint main document.")
        # The main part's type: its Override, else the Default for its extension.
        content_type = ""
        for override in types.iter(f"{_CT}Override"):
            if (override.get("PartName") or "").lstrip("/").lower() == main.lower():
                content_type = (override.get("ContentType") or "").strip().lower()
        if not content_type:
            extension = main.rpartition(".")[2].lower()
            for default in types.iter(f"{_CT}Default"):
                if (default.get("Extension") or "").lower() == extension:
                    content_type = (default.get("ContentType") or "").strip().lower()
        if content_type in OFFICE_TYPES:
            return OFFICE_TYPES[content_type]
        if content_type in OTHER_OFFICE_TYPES:
            raise refuse(f"This is {OTHER_OFFICE_TYPES[content_type]}; save it as .docx, .xlsx or .pptx and upload that.")
        raise refuse("This zip file is not a Word, Excel or PowerPoint document.")
