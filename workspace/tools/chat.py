"""Chat: channels, history, threads, search; post and reply. A message's id is its
data-room path; a thread's id is the id of its first message."""

from django.utils.text import slugify

from authoring.models import DocumentKind

from .base import OFFSET_ARG, ToolError, clip, fit, int_arg, page_into, text_arg, to_json, tool
from .common import actor, check_when, iso, save_new, stamp
from .files import not_found
from .paths import check_path
from .world import ChatMessage, Workspace

MAX_TEXT = 20_000
MAX_HITS = 20
MAX_SHOWN = 4_000  # of one message's text in a listing
CHANNEL_ARG = text_arg(
    'The channel\'s name as list_channels shows it (the leading "#" and case do not matter).', min_length=1, max_length=200
)
ID_ARG = text_arg("The message's id, as read_channel or search_chat shows it.", min_length=1)


def _channel(ws: Workspace, channel: str) -> list[ChatMessage]:
    messages = ws.chat_messages(channel)
    if not messages:
        names = ", ".join(c["channel"] for c in ws.channels()) or "(none)"
        raise ToolError(f"No channel {channel!r}. Channels: {names}.")
    return messages


def get_message(ws: Workspace, id: object) -> ChatMessage:
    id = check_path(id, what="id")
    message = ws.chat_message(id)
    if message is None:
        raise not_found(ws, id, DocumentKind.CHAT, "No chat message with id", "Use read_channel or search_chat to find messages.")
    return message


def shown(m: ChatMessage, replies: dict[str, int] | None = None) -> dict:
    found = {"id": m.id, "from": m.sender, "date": m.date_text, "text": clip(m.text, MAX_SHOWN)}
    if m.thread != m.id:
        found["reply_to"] = m.thread
    elif replies and replies.get(m.id):
        found["replies"] = replies[m.id]
    return found


def _reply_counts(messages: list[ChatMessage]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in messages:
        if m.thread != m.id:
            counts[m.thread] = counts.get(m.thread, 0) + 1
    return counts


@tool("list_channels", "List the chat channels with their number of messages and threads and the time of the last message.",
      {"offset": OFFSET_ARG})
def list_channels(ws: Workspace, offset: int = 0) -> str:
    channels = ws.channels()
    return to_json(page_into({"total": len(channels), "offset": offset}, "channels", channels, offset=offset, limit=len(channels),
                             again="list_channels"))


@tool(
    "read_channel",
    "Read a channel's messages, oldest first: the most recent `limit` messages, or those before a given message or time. "
    "Replies in a thread carry reply_to (the thread's id); read a whole thread with read_chat_thread.",
    {
        "channel": CHANNEL_ARG,
        "limit": int_arg("How many messages to return at most.", minimum=1, maximum=100, default=30),
        "before": text_arg("Only messages before this message id, or before this ISO 8601 time.", max_length=500),
    },
    required=("channel",),
)
def read_channel(ws: Workspace, channel: str, limit: int = 30, before: str = "") -> str:
    messages = _channel(ws, channel)
    replies = _reply_counts(messages)
    if before.strip():
        ids = [m.id for m in messages]
        if before.strip() in ids:
            messages = messages[: ids.index(before.strip())]
        else:
            when = check_when(before, "before")
            messages = [m for m in messages if m.date is not None and m.date < when]
    page = messages[-limit:]
    result = {"channel": page[0].channel if page else channel, "messages": [shown(m, replies) for m in page]}
    earlier = len(messages) - len(page) + fit(result, "messages", keep="last")
    if earlier:
        result["earlier_messages"] = earlier
        result["note"] = f"Call read_channel with before={to_json(result['messages'][0]['id'])} for earlier messages."
    return to_json(result)


@tool(
    "read_chat_thread",
    "Read a whole chat thread, oldest first (give the id of any message in it).",
    {
        "id": ID_ARG,
        "offset": int_arg("How many messages of the thread to skip (for a very long thread).", minimum=0, maximum=100_000, default=0),
    },
    required=("id",),
)
def read_chat_thread(ws: Workspace, id: str, offset: int = 0) -> str:
    message = get_message(ws, id)
    thread = ws.chat_thread(message.id)
    result = {"thread": message.thread, "channel": message.channel, "messages": [shown(m) for m in thread[offset:]]}
    later = fit(result, "messages")
    if later:
        result["note"] = f"{later} later messages are not shown; call read_chat_thread with offset={len(thread) - later}."
    return to_json(result)


@tool(
    "search_chat",
    "Search chat messages by words in their text or author (case-insensitive; every word must appear), newest first, "
    "optionally in one channel.",
    {"query": text_arg("Words to look for.", min_length=1, max_length=200), "channel": {**CHANNEL_ARG, "minLength": 0},
     "offset": OFFSET_ARG},
    required=("query",),
)
def search_chat(ws: Workspace, query: str, channel: str = "", offset: int = 0) -> str:
    words = query.lower().split()
    if not words:
        raise ToolError("The query is blank; give one or more words to look for.")
    messages = _channel(ws, channel) if channel.strip() else ws.chat_messages()
    hits = [m for m in reversed(messages) if all(w in f"{m.sender}\n{m.text}".lower() for w in words)]
    again = f"search_chat with query={to_json(query)}" + (f", channel={to_json(channel)}" if channel.strip() else "")
    return to_json(page_into({"query": query, "matches": len(hits), "offset": offset}, "messages",
                             [{**shown(m), "channel": m.channel} for m in hits], offset=offset, limit=MAX_HITS, again=again))


def _post(ws: Workspace, *, channel: str, text: str, thread: str = "", after=None) -> str:
    sender = actor(ws)
    when = stamp(after)
    metadata = {"channel": channel, "from": sender, "date": iso(when), "thread": thread}
    path = save_new(ws, folder=f"Chat/{slugify(channel)[:60] or 'channel'}", when=when, title=ws.overlay.actor_name,
                    kind=DocumentKind.CHAT, content=text, metadata=metadata)
    return to_json({"posted": path, "channel": channel, "date": iso(when), **({"reply_to": thread} if thread else {})})


@tool(
    "post_message",
    "Post a new message in an existing channel, as you.",
    {"channel": CHANNEL_ARG, "text": text_arg("The message.", min_length=1, max_length=MAX_TEXT)},
    required=("channel", "text"),
    writes=True,
)
def post_message(ws: Workspace, channel: str, text: str) -> str:
    actor(ws)  # read-only is reported before a missing channel
    existing = _channel(ws, channel)
    return _post(ws, channel=existing[0].channel, text=text)


@tool(
    "reply_message",
    "Reply in the thread of a chat message, as you.",
    {"id": ID_ARG, "text": text_arg("The reply.", min_length=1, max_length=MAX_TEXT)},
    required=("id", "text"),
    writes=True,
)
def reply_message(ws: Workspace, id: str, text: str) -> str:
    actor(ws)
    message = get_message(ws, id)
    thread = ws.chat_thread(message.id)
    latest = max((m.date for m in thread if m.date is not None), default=None)
    return _post(ws, channel=message.channel, text=text, thread=message.thread, after=latest)
