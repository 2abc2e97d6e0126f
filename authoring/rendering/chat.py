"""Chat messages in the Google Chat export shape Archipelago reads (FORMATS.md, "Chat").

Ids are derived from (world_key, channel or path) so they are the same on every export:
group "Space <11 chars>", topic_id and message ids of 11 hex chars, users "User <21 digits>".
An imported message keeps the ids it came with (metadata group_id, topic_id, message_id,
user_id), which are written instead. A thread's root is the message whose metadata has
no 'thread'; its message_id ends with its own topic_id, and its replies share that
topic_id. Which message is the root is said by the ids, never by dates: a reply may be
dated before its root (clocks differ); it is still listed after it.
"""

import datetime as dt
import json

from .base import RenderError, WorldItem, stable_hex
from .headers import parse_chat, parse_items, parse_kept, parse_when, thread_roots


def group_id(world_key: str, channel: str) -> str:
    return "Space " + stable_hex("chat-space", world_key, channel, length=11).upper()


def user_id(world_key: str, email: str) -> str:
    return "User " + str(int(stable_hex("chat-user", world_key, email.lower(), length=24), 16))[:21].rjust(21, "1")


def topic_id(world_key: str, root: str) -> str:
    return stable_hex("chat-topic", world_key, root, length=11)


def space_code(group: str) -> str:
    """The first segment of a message_id: the group id without its "Space " (or "DM ") word."""
    return group.split(" ", 1)[1] if " " in group else group


def created_date(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def creator(person: dict) -> dict:
    return {"name": person["name"] or person["email"].split("@")[0], "email": person["email"], "user_type": "Human"}


def message_ids(structured: dict, kept: dict, *, world_key: str, path: str, root: str, root_kept: dict | None = None) -> dict:
    """{group_id, topic_id, message_id} of one message: the kept ones, else derived (a
    reply takes its root's topic). Raises RenderError when kept ids break the thread rule."""
    root_kept = kept if root == path else (root_kept or {})
    group = kept["group_id"] or group_id(world_key, structured["channel"])
    topic = kept["topic_id"] or root_kept.get("topic_id") or topic_id(world_key, root)
    unique = topic if root == path else stable_hex("chat-message", world_key, path, length=11)
    own = kept["message_id"] or f"{space_code(group)}/{topic}/{unique}"
    segments = own.split("/")
    if segments[1] != topic:
        raise RenderError(f"metadata 'message_id' ({own}) is not in its thread's topic {topic!r}.")
    if segments[2] == topic and root != path:
        # (A kept root's id may end otherwise: a thread imported without its first message.)
        raise RenderError(f"metadata 'message_id' ({own}) ends with its topic_id, which marks a thread's first message, "
                          "but this one replies.")
    return {"group_id": group, "topic_id": topic, "message_id": own}


def chat_message(structured: dict, ids: dict) -> dict:
    return {
        "creator": creator(structured["from"]),
        "created_date": created_date(parse_when(structured["date"], "date")),
        "text": structured["text"],
        "topic_id": ids["topic_id"],
        "message_id": ids["message_id"],
    }


def render_chat_message(content: str, metadata: dict, *, path: str, world_key: str = "") -> bytes:
    structured = parse_chat(content, metadata)
    root = str(metadata.get("thread") or "").strip() or path
    ids = message_ids(structured, parse_kept("chat", metadata), world_key=world_key, path=path, root=root)
    message = chat_message(structured, ids)
    message["group_id"] = ids["group_id"]
    message["group_name"] = structured["channel"]
    return (json.dumps(message, indent=2, ensure_ascii=False) + "\n").encode()


def _layout(items: list[WorldItem], world_key: str):
    """(by_path, roots, ids per path, paths in display order)."""
    by_path = parse_items(items, parse_chat, "chat message")
    roots = thread_roots(by_path, "chat message", dated=False)
    kept = {}
    for path, (item, _structured, _when) in by_path.items():
        try:
            kept[path] = parse_kept("chat", item.metadata)
        except RenderError as exc:
            raise RenderError(f"{path}: {exc.message}") from None
    ids: dict[str, dict] = {}
    owner: dict[str, str] = {}
    for path, root in roots.items():
        if by_path[path][1]["channel"] != by_path[root][1]["channel"]:
            raise RenderError(f"{path}: in channel {by_path[path][1]['channel']!r} but its thread starts in "
                              f"{by_path[root][1]['channel']!r} ({root}); a thread stays in one channel.")
        try:
            ids[path] = message_ids(by_path[path][1], kept[path], world_key=world_key, path=path, root=root, root_kept=kept[root])
            ids[root] = ids.get(root) or message_ids(by_path[root][1], kept[root], world_key=world_key, path=root, root=root)
            if ids[path]["group_id"] != ids[root]["group_id"] or ids[path]["topic_id"] != ids[root]["topic_id"]:
                raise RenderError(
                    f"metadata group_id / topic_id differ from its thread's first message {root}; a thread stays in one group and topic."
                )
        except RenderError as exc:
            raise RenderError(f"{path}: {exc.message}") from None
        own = ids[path]["message_id"]
        if owner.setdefault(own, path) != path:
            raise RenderError(f"{path}: has the message_id {own} of {owner[own]}; a message_id names one message.")
    # Oldest first, a reply never before its root (it may be dated earlier: see the module's note).
    def order(path: str):
        root = roots[path]
        when = max(by_path[path][2].astimezone(dt.UTC), by_path[root][2].astimezone(dt.UTC))
        return (when, path != root, path)

    return by_path, ids, kept, sorted(by_path, key=order)


def chat_message_ids(items: list[WorldItem], *, world_key: str = "") -> dict[str, str]:
    """path → message_id of each chat message, as chat_group_messages writes them."""
    _by_path, ids, _kept, _ordered = _layout(items, world_key)
    return {path: value["message_id"] for path, value in ids.items()}


def chat_group_messages(items: list[WorldItem], *, world_key: str = "") -> dict[str, dict]:
    """The chat folder of a world: {relative path under .apps_data/chat/: JSON object},
    one group per channel (Groups/<id>/messages.json and group_info.json) and one
    Users/<id>/user_info.json per author."""
    by_path, ids, kept, ordered = _layout(items, world_key)
    user_ids: dict[str, str] = {}  # email → user id: the first kept one, else derived
    for path in ordered:
        email = by_path[path][1]["from"]["email"].lower()
        if kept[path]["user_id"] and email not in user_ids:
            user_ids[email] = kept[path]["user_id"]
    groups: dict[str, dict] = {}
    users: dict[str, dict] = {}
    for path in ordered:
        _item, structured, _when = by_path[path]
        gid = ids[path]["group_id"]
        group = groups.setdefault(gid, {"name": structured["channel"], "members": [], "messages": []})
        group["messages"].append(chat_message(structured, ids[path]))
        person = creator(structured["from"])
        if all(m["email"].lower() != person["email"].lower() for m in group["members"]):
            group["members"].append(person)
        uid = user_ids.get(person["email"].lower()) or user_id(world_key, person["email"])
        user = users.setdefault(uid, {"user": person, "membership_info": []})
        if all(m["group_id"] != gid for m in user["membership_info"]):
            user["membership_info"].append({"group_name": group["name"], "group_id": gid, "membership_state": "MEMBER_JOINED"})
    files: dict[str, dict] = {}
    for gid, group in sorted(groups.items()):
        files[f"Groups/{gid}/group_info.json"] = {"name": group["name"], "members": group["members"]}
        files[f"Groups/{gid}/messages.json"] = {"messages": group["messages"]}
    for uid, user in sorted(users.items()):
        files[f"Users/{uid}/user_info.json"] = user
    return files


def render_chat(items: list[WorldItem], *, world_key: str = "") -> dict[str, bytes]:
    """chat_group_messages as file bytes (UTF-8 JSON, two-space indent), ready to write."""
    return {path: (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()
            for path, obj in chat_group_messages(items, world_key=world_key).items()}
