"""What an imported email, chat message or event keeps in its metadata.

Ids: the ones its file gave it (Message-ID, X-Thread-ID; chat group, topic, message and
user ids; UID) are stored only where they differ from the ones the renderers derive from
(WORLD_KEY, path), so a world Taskwright wrote comes back with no id in its metadata and
a foreign world keeps every id it came with (FORMATS.md, the last paragraph of "World on
disk"). An id the renderers could not write back (a second root of one topic, a
malformed id) is left to be derived.

world.json's metadata: what the app file says (READ_KEYS) wins over world.json, so a
header changed outside Taskwright is taken as changed; while the file still says what
world.json's metadata renders to (read_back), world.json's exact text is kept (a date
as typed, with its own offset, not as the file normalised it). Keys no file carries come
from world.json.
"""

import json
from email import policy
from email.parser import BytesParser

from authoring.rendering import RenderError
from authoring.rendering.chat import chat_message, group_id, message_ids, topic_id, user_id
from authoring.rendering.events import build_vevent, event_uid
from authoring.rendering.headers import KEPT_KEYS, parse_addresses, parse_chat, parse_email, parse_event, parse_kept
from authoring.rendering.mail import build_message, message_bytes, message_id

from .apps import AppItem, chat_row_metadata, email_headers, event_metadata
from .layout import WORLD_KEY

# The metadata keys an app file says (the readers give them), per kind; chat's "author"
# is the older name of "from".
READ_KEYS = {
    "email": {"from", "to", "cc", "bcc", "date", "subject", "attachments"},
    "chat": {"channel", "from", "author", "date"},
    "event": {"subject", "start", "end", "location", "attendees", "all_day", "tzid", "rrule", "exdate", "partstat"},
}
# ...and what the file alone decides: those, the thread and the ids.
FILE_KEYS = {kind: keys | {"thread", *KEPT_KEYS[kind]} for kind, keys in READ_KEYS.items()}


def kept_ids(item: AppItem, *, path: str, root: str, own: str, root_own: str) -> dict:
    """The id metadata of `item`, placed at `path` in a thread rooted at `root`. `own` and
    `root_own` are the ids the file gave it and its root ("" for an id used twice)."""
    if item.kind == "email":
        ids = _email_ids(item, path=path, root=root, own=own, root_own=root_own)
    elif item.kind == "chat":
        ids = _chat_ids(item, path=path, root=root, own=own)
    else:
        ids = {"uid": own} if own and own != event_uid(WORLD_KEY, path) else {}
    try:
        parse_kept(item.kind, ids)
    except RenderError:
        return {}  # not writable back as it is: derived ones are written instead
    return ids


def _email_ids(item: AppItem, *, path: str, root: str, own: str, root_own: str) -> dict:
    ids = {"message_id": own} if own and own != message_id(WORLD_KEY, path) else {}
    effective = own or message_id(WORLD_KEY, path)
    root_effective = effective if root == path else (root_own or message_id(WORLD_KEY, root))
    thread = item.raw.get("thread_id") or root_effective
    # What the mbox and the single .eml would write without thread_id (the .eml knows only the root's path).
    written = {effective} if root == path else {root_effective, message_id(WORLD_KEY, root)}
    if written != {thread}:
        ids["thread_id"] = thread
    return ids


def _chat_ids(item: AppItem, *, path: str, root: str, own: str) -> dict:
    channel = str(item.metadata.get("channel") or "")
    ids = {}
    group, topic = item.raw.get("group_id", ""), item.raw.get("topic_id", "")
    if group and group != group_id(WORLD_KEY, channel):
        ids["group_id"] = group
    if topic and topic != topic_id(WORLD_KEY, root):
        ids["topic_id"] = topic
    try:
        kept = parse_kept("chat", ids)
        derived = message_ids({"channel": channel}, kept, world_key=WORLD_KEY, path=path, root=root)["message_id"]
        if own and own != derived:
            message_ids({"channel": channel}, parse_kept("chat", {**ids, "message_id": own}), world_key=WORLD_KEY, path=path, root=root)
            ids["message_id"] = own
    except RenderError:
        pass  # the file's message_id breaks the thread rule (e.g. a second root of one topic): derived instead
    sender = parse_addresses(item.metadata.get("from"), "from") if "@" in str(item.metadata.get("from") or "") else []
    user = item.raw.get("user_id", "")
    if user and sender and user != user_id(WORLD_KEY, sender[0]["email"]):
        ids["user_id"] = user
    return ids


def read_back(kind: str, content: str, metadata: dict) -> dict | None:
    """The READ_KEYS an app file would say for this item once rendered: rendered and
    read back with the readers' own functions, so the comparison is exact. None when the
    metadata does not render."""
    try:
        if kind == "email":
            structured = parse_email(content, metadata)
            placeholder = "<read-back@taskwright.local>"
            data = message_bytes(build_message(structured, msg_id=placeholder, thread_id=placeholder, previous=[]))
            said, _when = email_headers(BytesParser(policy=policy.default).parsebytes(data))
        elif kind == "chat":
            structured = parse_chat(content, metadata)
            row = json.loads(json.dumps(chat_message(structured, {"topic_id": "t", "message_id": "s/t/t"})))
            said, _when = chat_row_metadata(row, structured["channel"])
        else:
            from icalendar import Event

            vevent = build_vevent(parse_event(content, metadata), parse_kept("event", metadata), "read-back@taskwright.local")
            said, _when = event_metadata(Event.from_ical(vevent.to_ical()))
    except RenderError:
        return None
    return {k: v for k, v in said.items() if v}


def merged_metadata(kind: str, content: str, from_file: dict, noted: dict) -> dict:
    """An imported item's metadata: the file's (`from_file`, ids and thread included),
    with world.json's (`noted`) where the file agrees or says nothing."""
    said = {k: v for k, v in from_file.items() if k in READ_KEYS[kind]}
    keys = {k: v for k, v in noted.items() if k in READ_KEYS[kind]} if read_back(kind, content, noted) == said else said
    others = {k: v for k, v in noted.items() if k not in FILE_KEYS[kind]}
    decided = {k: v for k, v in from_file.items() if k in FILE_KEYS[kind] and k not in READ_KEYS[kind]}
    return {**others, **keys, **decided}
