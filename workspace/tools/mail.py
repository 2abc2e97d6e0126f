"""Mail: list, search, read one email or a whole thread; send, reply, forward.
An email's id is its data-room path."""

import datetime as dt
from email.utils import getaddresses

from authoring.models import DocumentKind
from authoring.rendering.headers import format_address

from .base import ADDRESSES_ARG, LIMIT_ARG, OFFSET_ARG, PAGE_ARG, ToolError, fit, paged, snippet, text_arg, to_json, tool
from .common import DATE_HELP, actor, date_bound, iso, save_new, stamp
from .files import not_found
from .paths import check_path
from .world import Email, Workspace

MAX_BODY = 50_000
ID_ARG = text_arg("The email's id, as list_emails or search_emails shows it.", min_length=1)


def get_email(ws: Workspace, id: object) -> Email:
    id = check_path(id, what="id")
    email = ws.email(id)
    if email is None:
        raise not_found(ws, id, DocumentKind.EMAIL, "No email with id", "Use list_emails or search_emails to find emails.")
    return email


def summary(e: Email) -> dict:
    found = {"id": e.id, "date": e.date_text, "from": e.sender, "to": e.to, "subject": e.subject, "thread": e.thread,
             "snippet": snippet(e.body, width=100)}
    if e.attachments:
        found["attachments"] = e.attachments
    return found


def email_text(e: Email, ws: Workspace | None = None) -> str:
    lines = [f"Email id: {e.id}", f"From: {e.sender}", f"To: {e.to}"]
    lines += [f"{label}: {value}" for label, value in (("Cc", e.cc), ("Bcc", e.bcc)) if value]
    lines += [f"Date: {e.date_text}", f"Subject: {e.subject}"]
    if ws is not None:
        count = len(ws.email_thread(e.id))
        if count > 1:
            lines.append(f"Thread: {e.thread} ({count} emails; call read_thread to read them all)")
    if e.attachments:
        lines.append(f"Attachments: {', '.join(e.attachments)} (data-room files: read them with read_file)")
    return "\n".join(lines) + "\n\n" + (e.body.rstrip() or "(no text)")


def _listing(emails: list[Email], limit: int, offset: int, extra: dict) -> str:
    newest_first = sorted(emails, key=lambda e: (e.date is not None, e.date or dt.datetime.min.replace(tzinfo=dt.UTC), e.id), reverse=True)
    page = newest_first[offset : offset + limit]
    result = {**extra, "total": len(emails), "offset": offset, "emails": [summary(e) for e in page]}
    shown = len(page) - fit(result, "emails")
    if offset + shown < len(emails):
        result["next_offset"] = offset + shown
    return to_json(result)


@tool(
    "list_emails",
    "List emails, newest first, with sender, recipients, subject, thread id and a snippet. Optionally only those in one "
    "mail folder (the folders are listed in the result).",
    {"folder": text_arg('A mail folder such as "Mail/Sent"; "" for all.'), "limit": LIMIT_ARG, "offset": OFFSET_ARG},
)
def list_emails(ws: Workspace, folder: str = "", limit: int = 20, offset: int = 0) -> str:
    emails = ws.emails()
    folders = sorted({e.folder for e in emails})
    folder = check_path(folder, what="folder", allow_root=True)
    if folder:
        emails = [e for e in emails if e.folder == folder or e.folder.startswith(folder + "/")]
        if not emails:
            raise ToolError(f"No mail folder {folder!r}. Mail folders: {', '.join(folders) or '(none)'}.")
    return _listing(emails, limit, offset, {"folders": folders})


def _has(haystack: str, needle: str) -> bool:
    return all(word in haystack.lower() for word in needle.lower().split())


@tool(
    "search_emails",
    "Find emails by any combination of sender, recipient (to, cc or bcc), subject words, text words (subject or body) "
    "and a date range. Text matching ignores case; every word given must appear. Newest first.",
    {
        "sender": text_arg("Part of the sender's name or address."),
        "recipient": text_arg("Part of a recipient's name or address."),
        "subject": text_arg("Words in the subject."),
        "text": text_arg("Words in the subject or body."),
        "date_from": text_arg(f"Only emails on or after this. {DATE_HELP}", max_length=40),
        "date_to": text_arg(f"Only emails on or before this (a bare date includes that day). {DATE_HELP}", max_length=40),
        "limit": LIMIT_ARG,
        "offset": OFFSET_ARG,
    },
)
def search_emails(ws: Workspace, sender: str = "", recipient: str = "", subject: str = "", text: str = "",
                  date_from: str = "", date_to: str = "", limit: int = 20, offset: int = 0) -> str:
    start = date_bound(date_from, "date_from", end=False) if date_from.strip() else None
    stop = date_bound(date_to, "date_to", end=True) if date_to.strip() else None
    found = [
        e for e in ws.emails()
        if (not sender.strip() or sender.strip().lower() in e.sender.lower())
        and (not recipient.strip() or recipient.strip().lower() in f"{e.to}, {e.cc}, {e.bcc}".lower())
        and (not subject.strip() or _has(e.subject, subject))
        and (not text.strip() or _has(f"{e.subject}\n{e.body}", text))
        and (start is None or start.admits(e.date))
        and (stop is None or stop.admits(e.date))
    ]
    return _listing(found, limit, offset, {})


@tool("read_email", "Read one email: its headers, attachments and full body.", {"id": ID_ARG, "page": PAGE_ARG}, required=("id",))
def read_email(ws: Workspace, id: str, page: int = 1) -> str:
    email = get_email(ws, id)
    return paged(email_text(email, ws), page=page, header="", again=f"read_email with id={to_json(email.id)}")


@tool(
    "read_thread",
    "Read the whole thread an email belongs to (give the id of any email in it), oldest first.",
    {"id": ID_ARG, "page": PAGE_ARG},
    required=("id",),
)
def read_thread(ws: Workspace, id: str, page: int = 1) -> str:
    email = get_email(ws, id)
    thread = ws.email_thread(email.id)
    text = "\n\n-----\n\n".join(email_text(e) for e in thread)
    header = f"Thread {thread[0].thread}: {len(thread)} email{'s' if len(thread) != 1 else ''}, oldest first"
    return paged(text, page=page, header=header, again=f"read_thread with id={to_json(email.id)}")


def _addresses(values: list[str]) -> str:
    return ", ".join(v.strip() for v in values if v.strip())


def _without(addresses: str, *remove: str) -> str:
    drop = {a.lower() for _, a in getaddresses(list(remove)) if a}
    kept, seen = [], set()
    for name, addr in getaddresses([addresses]):
        if addr and addr.lower() not in drop and addr.lower() not in seen:
            seen.add(addr.lower())
            kept.append(format_address({"name": name, "email": addr}))
    return ", ".join(kept)


def _send(ws: Workspace, *, to: str, cc: str, subject: str, body: str, attachments: list[str], thread: str = "",
          after: dt.datetime | None = None) -> str:
    sender = actor(ws)
    for path in attachments:
        if ws.get(path, DocumentKind.FILE) is None:
            raise ToolError(f"Attachment {path!r} is not a file in the data room; attach files by their path, as list_files shows it.")
    when = stamp(after)
    metadata = {"from": sender, "to": to, "cc": cc, "date": iso(when), "subject": subject, "thread": thread,
                "attachments": list(attachments)}  # a list: a path may hold a comma
    path = save_new(ws, folder="Mail/Sent", when=when, title=subject, kind=DocumentKind.EMAIL, content=body, metadata=metadata)
    return f"Sent. Email id: {path}\nFrom: {sender}\nTo: {to}" + (f"\nCc: {cc}" if cc else "") + f"\nDate: {iso(when)}\nSubject: {subject}"


@tool(
    "send_email",
    "Send a new email from you (it is kept in your workspace, in Mail/Sent). Attach data-room files by their paths.",
    {
        "to": {**ADDRESSES_ARG, "minItems": 1},
        "cc": ADDRESSES_ARG,
        "subject": text_arg("The subject line.", min_length=1),
        "body": text_arg("The plain-text body.", max_length=MAX_BODY),
        "attachments": {"type": "array", "description": "Data-room file paths to attach, e.g. [\"Work/Memo.docx\"].",
                        "items": {"type": "string", "minLength": 1, "maxLength": 500}, "maxItems": 20},
    },
    required=("to", "subject", "body"),
    writes=True,
)
def send_email(
    ws: Workspace, to: list[str], subject: str, body: str, cc: list[str] | None = None, attachments: list[str] | None = None
) -> str:
    paths = [check_path(p, what="attachment") for p in attachments or []]
    return _send(ws, to=_addresses(to), cc=_addresses(cc or []), subject=" ".join(subject.split()), body=body, attachments=paths)


def _quoted(e: Email) -> str:
    return "\n".join("> " + line if line else ">" for line in e.body.rstrip().splitlines())


def _prefixed(prefix: str, subject: str) -> str:
    return subject if subject.lower().startswith(prefix.lower()) else f"{prefix} {subject}".strip()


def _latest(thread: list[Email]) -> dt.datetime | None:
    return max((e.date for e in thread if e.date is not None), default=None)


@tool(
    "reply_email",
    "Reply to an email. The reply goes to its sender (with reply_all, also to everyone it was sent or copied to), "
    "quotes it, and joins its thread.",
    {"id": ID_ARG, "body": text_arg("Your reply, plain text.", max_length=MAX_BODY),
     "reply_all": {"type": "boolean", "description": "Also send to every other recipient of the email.", "default": False}},
    required=("id", "body"),
    writes=True,
)
def reply_email(ws: Workspace, id: str, body: str, reply_all: bool = False) -> str:
    original = get_email(ws, id)
    me = actor(ws)
    to = _without(original.sender, me) or _without(original.to, me)
    cc = _without(f"{original.to}, {original.cc}", me, to) if reply_all else ""
    if not to:
        raise ToolError("This email has no sender or recipient to reply to; use send_email instead.")
    text = f"{body.rstrip()}\n\nOn {original.date_text}, {original.sender} wrote:\n{_quoted(original)}\n"
    try:
        return _send(ws, to=to, cc=cc, subject=_prefixed("Re:", original.subject), body=text, attachments=[],
                     thread=original.thread, after=_latest(ws.email_thread(original.id)))
    except ToolError as exc:
        raise ToolError(f"{exc.message} (The addresses come from the email you are answering; "
                        "use send_email with valid addresses instead.)") from None


@tool(
    "forward_email",
    "Forward an email, with its attachments, to new recipients, optionally with a note above it.",
    {"id": ID_ARG, "to": {**ADDRESSES_ARG, "minItems": 1}, "body": text_arg("A note above the forwarded email.", max_length=MAX_BODY)},
    required=("id", "to"),
    writes=True,
)
def forward_email(ws: Workspace, id: str, to: list[str], body: str = "") -> str:
    original = get_email(ws, id)
    forwarded = (f"{body.rstrip()}\n\n---------- Forwarded message ----------\nFrom: {original.sender}\nDate: {original.date_text}\n"
                 f"Subject: {original.subject}\nTo: {original.to}\n\n{original.body.rstrip()}\n").lstrip("\n")
    attachments = [p for p in original.attachments if ws.get(p, DocumentKind.FILE) is not None]
    return _send(ws, to=_addresses(to), cc="", subject=_prefixed("Fwd:", original.subject), body=forwarded, attachments=attachments,
                 thread=original.thread, after=_latest(ws.email_thread(original.id)))
