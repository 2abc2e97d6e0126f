"""Chat: the channels, and one channel's messages in order with their threads folded
under the message that started them. Texts are plain: the template escapes them."""

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from workspace.forms import ChatPostForm, ChatReplyForm
from workspace.tools import ChatMessage
from workspace.tools.world import channel_key
from workspace.views.common import Scope, anchor, initials, people, render_screen, scope_get, shown

TEMPLATE = "workspace/replica_chat.html"


def _message(message: ChatMessage) -> dict:
    name = people(message.sender)
    return {"message": message, "sender_name": name or "Unknown", "initials": initials(name),
            "when": shown(message.date, long=True) or message.date_text, "anchor": anchor(message.id)}


def _threads(messages: list[ChatMessage]) -> list[dict]:
    """Top-level messages in order, each with its replies. A reply whose first message is
    not in this channel (deleted, or posted elsewhere) heads its own thread."""
    groups: dict[str, list[ChatMessage]] = {}
    for message in messages:
        groups.setdefault(message.thread, []).append(message)
    threads = []
    for group in groups.values():
        head, *replies = group
        threads.append({**_message(head), "replies": [_message(r) for r in replies],
                        "reply_changes": sum(1 for r in replies if r.change)})
    return threads


@require_GET
def chat(request: HttpRequest, scope: str, pk: int) -> HttpResponse:
    return chat_screen(request, scope_get(request, scope, pk), request.GET)


def chat_screen(request: HttpRequest, s: Scope, params, *, status: int = 200, post_form=None, reply_form=None, reply_to: str = "",
                error: str = "", notice: str = "") -> HttpResponse:
    """One channel as `params` asks for it; in a sandbox, with a form to post and one to reply
    in each thread (the one refused, bound with its errors, is open)."""
    ws = s.workspace
    changes: dict[str, int] = {}
    for message in ws.chat_messages():
        if message.change:
            changes[channel_key(message.channel)] = changes.get(channel_key(message.channel), 0) + 1
    requested = channel_key(params.get("channel", ""))
    channels = []
    for entry in ws.channels():
        key = channel_key(entry["channel"])
        channels.append({**entry, "key": key, "name": "#" + key if key else "(no channel)", "changes": changes.get(key, 0)})
    keys = [c["key"] for c in channels]
    current = requested if requested in keys else (keys[0] if keys and not requested else None)
    messages = ws.chat_messages(current) if current is not None else []
    writable = s.is_sandbox and s.can_author and current is not None
    threads = _threads(messages)
    for t in threads:
        refused = reply_form is not None and reply_to in (t["message"].id, t["message"].thread)
        t["reply_form"] = (reply_form if refused else ChatReplyForm(auto_id=f"id_{t['anchor']}_%s")) if writable else None
        t["reply_open"] = refused
    context = {
        "scope": s, "app": "chat", "channels": channels, "current": current, "missing_channel": requested if current is None else "",
        "channel_name": next((c["name"] for c in channels if c["key"] == current), ""), "threads": threads,
        "message_count": len(messages), "writable": writable, "error": error, "notice": notice,
        "post_form": (post_form or ChatPostForm()) if writable else None, "reply_to": reply_to,
        # A refusal is said in the form that was sent, else above the channel.
        "error_in_form": writable and (any(t["reply_open"] for t in threads) if reply_form is not None else True),
    }
    return render_screen(request, TEMPLATE, context, partials=("replica-chat",), status=status)
