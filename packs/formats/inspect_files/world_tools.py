"""Read-only tools over a Taskwright world, for an Inspect AI agent.

Each sample's world is copied into its sandbox as `world.zip` (Sample.files), and the
task's own input files, when it has any, under `task_files/`, with their data-room paths
listed in `task_files.json`: the tools lay them over the world's files (a task file wins
over a world file at the same path). The zip is in the APEX-Agents / Archipelago layout:

    filesystem/...                                   the data room (the agent sees it as "/")
    .apps_data/mail/sent.mbox                        all email, one mbox
    .apps_data/chat/Groups/<group_id>/messages.json  + group_info.json
    .apps_data/calendar/*.ics                        the calendar
    .apps_data/taskwright/world.json                 Taskwright's notes: the source text of every file

Every tool reads the zip through `sandbox()`, so the tools work in any sandbox that holds
the file (local, docker, ...). Text of a data-room file comes from world.json when the
world has it (the exact text the author wrote); otherwise docx, pptx and xlsx are read
with the standard library, a PDF's text only where its streams hold plain text operators.

Only inspect_ai and the standard library are imported: the pack runs without Taskwright.
"""

import email
import email.policy
import io
import json
import posixpath
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from xml.etree import ElementTree

from inspect_ai.tool import Tool, ToolError, tool
from inspect_ai.util import sandbox

WORLD_ZIP = "world.zip"  # where Sample.files puts the world, relative to the sandbox's working directory
TASK_FILES = "task_files.json"  # the data-room paths of the task's own input files, when it has any
TASK_FILES_DIR = "task_files/"  # where Sample.files puts them, each at its data-room path below this folder
FILESYSTEM = "filesystem/"
MAIL_DIR = ".apps_data/mail/"
CHAT_GROUPS = ".apps_data/chat/Groups/"
CALENDAR_DIR = ".apps_data/calendar/"
SIDECAR = ".apps_data/taskwright/world.json"
PAGE = 12_000  # characters per read: below Inspect's default tool output limit (16 KiB)
TEXT_SUFFIXES = {".md", ".txt", ".csv", ".tsv", ".json", ".yaml", ".yml", ".xml", ".html", ".htm", ".eml", ".ics", ".log"}


# -- the world zip ---------------------------------------------------------------------------


@dataclass
class World:
    archive: zipfile.ZipFile
    # The task's own input files, by zip name (filesystem/<path>): laid over the world's.
    task_files: dict[str, bytes] = field(default_factory=dict)

    def names(self, prefix: str) -> list[str]:
        found = {n for n in self.archive.namelist() if n.startswith(prefix) and not n.endswith("/")}
        return sorted(found | {n for n in self.task_files if n.startswith(prefix)})

    def read(self, name: str) -> bytes:
        return self.task_files[name] if name in self.task_files else self.archive.read(name)

    def size(self, name: str) -> int:
        return len(self.task_files[name]) if name in self.task_files else self.archive.getinfo(name).file_size

    @cached_property
    def sidecar(self) -> dict:
        try:
            return json.loads(self.read(SIDECAR))
        except (KeyError, ValueError):
            return {}


async def open_world() -> World:
    try:
        data = await sandbox().read_file(WORLD_ZIP, text=False)
    except FileNotFoundError:
        raise ToolError("This sample has no world (world.zip is not in the sandbox).") from None
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ToolError("world.zip in the sandbox is not a zip: run from the unpacked pack's root.") from None
    return World(archive, await _task_files())


async def _task_files() -> dict[str, bytes]:
    """The task's input files: TASK_FILES lists their data-room paths; each is in the
    sandbox under TASK_FILES_DIR (Sample.files)."""
    try:
        paths = json.loads(await sandbox().read_file(TASK_FILES))
    except FileNotFoundError:
        return {}
    return {data_room_path(path): await sandbox().read_file(TASK_FILES_DIR + path, text=False) for path in paths}


def data_room_path(path: str) -> str:
    """The zip name of a data-room path ("/Deal/memo.docx" or "Deal/memo.docx")."""
    clean = posixpath.normpath("/" + path.strip()).lstrip("/")
    return FILESYSTEM + ("" if clean == "." else clean)


# -- file text ---------------------------------------------------------------------------------

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PR = "{http://schemas.openxmlformats.org/package/2006/relationships}"


def _xml(archive: zipfile.ZipFile, name: str) -> ElementTree.Element:
    # The world's own files; expat fetches no external entities.
    return ElementTree.fromstring(archive.read(name))  # noqa: S314


def docx_text(data: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as doc:
        body = _xml(doc, "word/document.xml")
    lines = []
    for paragraph in body.iter(f"{W}p"):
        parts = []
        for node in paragraph.iter():
            if node.tag == f"{W}t":
                parts.append(node.text or "")
            elif node.tag == f"{W}tab":
                parts.append("\t")
            elif node.tag in (f"{W}br", f"{W}cr"):
                parts.append("\n")
        lines.append("".join(parts))
    return "\n".join(lines)


def pptx_text(data: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as deck:
        slides = sorted(
            (n for n in deck.namelist() if re.fullmatch(r"ppt/slides/slide\d+\.xml", n)), key=lambda n: int(re.sub(r"\D", "", n))
        )
        out = []
        for number, name in enumerate(slides, start=1):
            paragraphs = ["".join(t.text or "" for t in p.iter(f"{A}t")) for p in _xml(deck, name).iter(f"{A}p")]
            out.append(f"## Slide {number}\n" + "\n".join(p for p in paragraphs if p))
    return "\n\n".join(out)


def xlsx_text(data: bytes) -> str:
    """Cell values as stored (formulas with their cached values), one table per sheet."""
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        names = set(book.namelist())
        shared = []
        if "xl/sharedStrings.xml" in names:
            shared = ["".join(t.text or "" for t in si.iter(f"{S}t")) for si in _xml(book, "xl/sharedStrings.xml").iter(f"{S}si")]
        targets = {rel.get("Id"): rel.get("Target", "") for rel in _xml(book, "xl/_rels/workbook.xml.rels").iter(f"{PR}Relationship")}
        out = []
        for sheet in _xml(book, "xl/workbook.xml").iter(f"{S}sheet"):
            target = targets.get(sheet.get(f"{R}id"), "")
            name = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
            if name not in names:
                continue
            rows = []
            for row in _xml(book, name).iter(f"{S}row"):
                cells = []
                for cell in row.iter(f"{S}c"):
                    kind, value = cell.get("t"), cell.find(f"{S}v")
                    if kind == "inlineStr":
                        text = "".join(t.text or "" for t in cell.iter(f"{S}t"))
                    elif value is None or value.text is None:
                        continue
                    elif kind == "s":
                        index = int(value.text)
                        text = shared[index] if index < len(shared) else ""
                    elif kind == "b":
                        text = "TRUE" if value.text == "1" else "FALSE"
                    else:
                        text = value.text
                    cells.append(f"{cell.get('r') or '?'}={text}")
                if cells:
                    rows.append(f"row {row.get('r')}: " + " | ".join(cells))
            out.append(f"## Sheet: {sheet.get('name')}\n" + "\n".join(rows))
    return "\n\n".join(out)


_PDF_STREAM = re.compile(rb"<<(.*?)>>\s*stream\r?\n(.*?)\r?\nendstream", re.S)
_PDF_TEXT = re.compile(rb"\((?:\\.|[^\\)])*\)\s*Tj|\[(?:\\.|[^\]])*\]\s*TJ|T\*|\bET\b|\bTd\b|\bTD\b|'")
_PDF_STRING = re.compile(rb"\(((?:\\.|[^\\)])*)\)")
_PDF_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f", b"(": b"(", b")": b")", b"\\": b"\\"}


def _pdf_string(raw: bytes) -> str:
    def unescape(match: re.Match) -> bytes:
        escaped = match.group(1)
        if escaped[:1].isdigit():
            return bytes([int(escaped, 8) & 0xFF])
        return _PDF_ESCAPES.get(escaped, escaped)

    return re.sub(rb"\\([0-7]{1,3}|.)", unescape, raw, flags=re.S).decode("latin-1")


def pdf_text(data: bytes) -> str:
    """Best effort: the strings shown by Tj/TJ in (Flate-)compressed or plain content
    streams. Fonts with custom encodings (subset CID fonts) give no readable text."""
    lines, current = [], []
    for header, body in _PDF_STREAM.findall(data):
        if b"/FlateDecode" in header:
            try:
                body = zlib.decompress(body)
            except zlib.error:
                continue
        elif b"/Filter" in header:
            continue
        for operator in _PDF_TEXT.finditer(body):
            token = operator.group(0)
            if token.endswith((b"Tj", b"TJ")):
                current.append("".join(_pdf_string(s) for s in _PDF_STRING.findall(token)))
            elif current:
                lines.append("".join(current))
                current = []
    if current:
        lines.append("".join(current))
    return "\n".join(line for line in lines if line.strip())


def file_text(world: World, name: str) -> str:
    """The text of one data-room file (`name` is its zip name under filesystem/)."""
    source = None if name in world.task_files else world.sidecar.get("files", {}).get(name.removeprefix(FILESYSTEM))
    written = source["content"] if isinstance(source, dict) and isinstance(source.get("content"), str) else None
    data = world.read(name)
    suffix = posixpath.splitext(name)[1].lower()
    if written is not None and suffix == ".xlsx":
        # The source shows formulas; the workbook holds their values as well.
        try:
            return f"{xlsx_text(data)}\n\n## As written (with formulas)\n{written}"
        except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, ValueError):
            return written
    if written is not None:
        return written
    readers = {".docx": docx_text, ".pptx": pptx_text, ".xlsx": xlsx_text, ".pdf": pdf_text}
    if suffix in readers:
        try:
            text = readers[suffix](data)
        except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, ValueError) as exc:
            return f"(could not read {suffix} text: {type(exc).__name__})"
        return text or f"(no text could be read from this {suffix} file with the standard library)"
    if suffix in TEXT_SUFFIXES or b"\0" not in data[:4096]:
        return data.decode("utf-8", errors="replace")
    return f"(a binary file of {len(data)} bytes; no text reading for {suffix or 'it'})"


# -- mail, chat, calendar ------------------------------------------------------------------------


def _mbox_messages(data: bytes) -> list[email.message.EmailMessage]:
    """Messages of an mbox: each starts at a "From " line at the start of the file or
    after a blank line (body lines that start so are written as ">From ")."""
    chunks = re.split(rb"(?:^|\n\n)From [^\n]*\n", data.replace(b"\r\n", b"\n"))
    unquoted = (re.sub(rb"(?m)^>(>*From )", rb"\1", chunk) for chunk in chunks if chunk.strip())
    return [email.message_from_bytes(chunk, policy=email.policy.default) for chunk in unquoted]


def mail_messages(world: World) -> list[email.message.EmailMessage]:
    names = [n for n in world.names(MAIL_DIR) if n.endswith(".mbox")]
    return _mbox_messages(world.read(names[0])) if names else []  # Archipelago reads the first mbox only


def mail_body(message: email.message.EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        return part.get_content()
    except (LookupError, ValueError):
        return part.get_payload(decode=True).decode("utf-8", errors="replace")


def mail_summary(message: email.message.EmailMessage) -> str:
    fields = [("id", message.get("Message-ID")), ("date", message.get("Date")), ("from", message.get("From")), ("to", message.get("To")),
              ("cc", message.get("Cc")), ("subject", message.get("Subject")), ("thread", message.get("X-Thread-ID")),
              ("attachments", message.get("X-Attachments"))]
    return "\n".join(f"{key}: {value}" for key, value in fields if value)


def chat_groups(world: World) -> list[tuple[str, dict, list[dict]]]:
    """(group_id, group_info, messages) per chat group, in folder order."""
    groups = []
    for name in world.names(CHAT_GROUPS):
        if not name.endswith("/messages.json"):
            continue
        folder = name.removesuffix("messages.json")
        group_id = folder.removeprefix(CHAT_GROUPS).strip("/")
        try:
            messages = json.loads(world.read(name)).get("messages", [])
        except ValueError:
            messages = []
        try:
            info = json.loads(world.read(folder + "group_info.json"))
        except (KeyError, ValueError):
            info = {}
        groups.append((group_id, info, messages))
    return groups


def _ics_unescape(value: str) -> str:
    return re.sub(r"\\([\\;,nN])", lambda m: "\n" if m.group(1) in "nN" else m.group(1), value)


def calendar_events(world: World) -> list[dict]:
    """Each VEVENT as {property: [(params, value), ...]} of its unfolded lines."""
    events = []
    for name in world.names(CALENDAR_DIR):
        if not name.endswith(".ics"):
            continue
        text = world.read(name).decode("utf-8", errors="replace").replace("\r\n", "\n")
        lines = re.sub(r"\n[ \t]", "", text).split("\n")
        event: dict | None = None
        for line in lines:
            if line == "BEGIN:VEVENT":
                event = {}
            elif line == "END:VEVENT" and event is not None:
                events.append(event)
                event = None
            elif event is not None and ":" in line:
                head, value = _split_ics_line(line)
                key, *params = head.split(";")
                event.setdefault(key.upper(), []).append((";".join(params), value))
    return events


def _split_ics_line(line: str) -> tuple[str, str]:
    # The first ":" outside a quoted parameter value (CN="Doe: Jane") ends the name.
    quoted = False
    for index, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == ":" and not quoted:
            return line[:index], line[index + 1 :]
    return line, ""


def event_summary(event: dict) -> str:
    def first(key: str) -> str:
        values = event.get(key)
        return _ics_unescape(values[0][1]) if values else ""

    attendees = []
    for params, value in event.get("ATTENDEE", []):
        cn = re.search(r'CN="?([^";:]*)"?', params)
        address = value.removeprefix("mailto:").removeprefix("MAILTO:")
        attendees.append(f"{cn.group(1)} <{address}>" if cn else address)
    fields = [("uid", first("UID")), ("summary", first("SUMMARY")), ("start", first("DTSTART")), ("end", first("DTEND")),
              ("location", first("LOCATION")), ("organizer", first("ORGANIZER").removeprefix("mailto:")),
              ("attendees", ", ".join(attendees)), ("repeats", first("RRULE")), ("description", first("DESCRIPTION"))]
    return "\n".join(f"{key}: {value}" for key, value in fields if value)


def _page(text: str, offset: int) -> str:
    chunk = text[max(0, offset) : max(0, offset) + PAGE]
    if offset + PAGE < len(text):
        chunk += f"\n\n[... {len(text) - offset - PAGE} more characters: call again with offset={offset + PAGE}]"
    return chunk


# -- the tools -------------------------------------------------------------------------------------


@tool
def list_files() -> Tool:
    async def execute(folder: str = "/") -> str:
        """List the data room's files (their paths from "/") under a folder, with sizes.

        Args:
            folder: The folder to list, e.g. "/" or "/Deal".
        """
        world = await open_world()
        prefix = data_room_path(folder)
        prefix = prefix if prefix.endswith("/") else prefix + "/"
        rows = [f"/{name.removeprefix(FILESYSTEM)}  ({world.size(name)} bytes)" for name in world.names(prefix)]
        return "\n".join(sorted(rows)) or f"No files under {folder}."

    return execute


@tool
def read_file() -> Tool:
    async def execute(path: str, offset: int = 0) -> str:
        """Read the text of a data-room file (documents, spreadsheets, slides, PDFs, text).

        Args:
            path: The file's path as list_files shows it, e.g. "/Deal/SPA draft v1.docx".
            offset: Where to start, in characters (long files come in pages).
        """
        world = await open_world()
        name = data_room_path(path)
        if name not in world.task_files and name not in world.archive.namelist():
            raise ToolError(f"No file {path!r} in the data room; list_files shows what there is.")
        return _page(file_text(world, name), offset)

    return execute


@tool
def list_mail() -> Tool:
    async def execute(query: str = "") -> str:
        """List the mailbox: id, date, sender, recipients, subject and thread of every email, oldest first.

        Args:
            query: Only emails whose headers or body contain this text (case-insensitive); empty for all.
        """
        world = await open_world()
        needle = query.lower()
        rows = [mail_summary(m) for m in mail_messages(world) if not needle or needle in (mail_summary(m) + mail_body(m)).lower()]
        return "\n\n".join(rows) or "No emails."

    return execute


@tool
def read_mail() -> Tool:
    async def execute(message_id: str) -> str:
        """Read one email in full: its headers and body.

        Args:
            message_id: The email's id as list_mail shows it, e.g. "<abc@example.com>".
        """
        world = await open_world()
        wanted = message_id.strip().strip("<>")
        for message in mail_messages(world):
            if (message.get("Message-ID") or "").strip().strip("<>") == wanted:
                return f"{mail_summary(message)}\n\n{mail_body(message)}"
        raise ToolError(f"No email with id {message_id!r}; list_mail shows the ids.")

    return execute


@tool
def list_chat() -> Tool:
    async def execute() -> str:
        """List the chat groups (spaces): id, name, members and how many messages each holds."""
        world = await open_world()
        rows = []
        for group_id, info, messages in chat_groups(world):
            members = ", ".join(f"{m.get('name')} <{m.get('email')}>" for m in info.get("members", []))
            rows.append(f"id: {group_id}\nname: {info.get('name', '')}\nmembers: {members}\nmessages: {len(messages)}")
        return "\n\n".join(rows) or "No chat groups."

    return execute


@tool
def read_chat() -> Tool:
    async def execute(group_id: str) -> str:
        """Read a chat group's messages in order, with author, time and thread.

        Args:
            group_id: The group's id as list_chat shows it, e.g. "Space AAAA1234".
        """
        world = await open_world()
        for gid, info, messages in chat_groups(world):
            if gid == group_id.strip() or info.get("name") == group_id.strip():
                rows = []
                for m in messages:
                    creator = m.get("creator") or {}
                    rows.append(f"[{m.get('created_date', '')}] {creator.get('name', '?')} <{creator.get('email', '')}> "
                                f"(thread {m.get('topic_id', '')}, id {m.get('message_id', '')}):\n{m.get('text', '')}")
                return "\n\n".join(rows) or "No messages in this group."
        raise ToolError(f"No chat group {group_id!r}; list_chat shows the groups.")

    return execute


@tool
def list_events() -> Tool:
    async def execute() -> str:
        """List the calendar's events: title, start, end, location, attendees and description."""
        world = await open_world()
        events = sorted(calendar_events(world), key=lambda e: (e.get("DTSTART") or [("", "")])[0][1])
        return "\n\n".join(event_summary(e) for e in events) or "No events."

    return execute


@tool
def search_world() -> Tool:
    async def execute(query: str) -> str:
        """Find text anywhere in the world: data-room files, emails, chat and calendar. Shows where each match is.

        Args:
            query: The text to look for (case-insensitive).
        """
        needle = query.strip().lower()
        if not needle:
            raise ToolError("Give the text to look for.")
        world = await open_world()
        places: list[tuple[str, str]] = [(f"file /{n.removeprefix(FILESYSTEM)}", file_text(world, n)) for n in world.names(FILESYSTEM)]
        places += [
            (f"email {m.get('Message-ID')} ({m.get('Subject')})", f"{mail_summary(m)}\n{mail_body(m)}") for m in mail_messages(world)
        ]
        places += [(f"chat {gid} {m.get('message_id', '')}", str(m.get("text", ""))) for gid, _, ms in chat_groups(world) for m in ms]
        places += [(f"event {(e.get('UID') or [('', '')])[0][1]}", event_summary(e)) for e in calendar_events(world)]
        hits = []
        for where, text in places:
            lowered = text.lower()
            start = lowered.find(needle)
            if start >= 0:
                snippet = " ".join(text[max(0, start - 150) : start + len(needle) + 150].split())
                hits.append(f"{where}: (×{lowered.count(needle)}) ...{snippet}...")
        return _page("\n\n".join(hits), 0) if hits else f"No match for {query!r}."

    return execute


def world_tools() -> list[Tool]:
    return [list_files(), read_file(), search_world(), list_mail(), read_mail(), list_chat(), read_chat(), list_events()]
