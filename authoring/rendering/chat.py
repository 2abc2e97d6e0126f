"""Chat messages in the Google Chat export shape Archipelago reads (FORMATS.md, "Chat").

Ids are derived from (world_key, channel or path) so they are the same on every export:
group "Space <11 chars>", topic_id and message ids of 11 hex chars, users "User <21 digits>".
A thread's root is the message whose metadata has no 'thread'; its message_id ends with
its own topic_id, and its replies share that topic_id.
"""

import datetime as dt
import json

from .base import RenderError, WorldItem, stable_hex
from .headers import parse_chat, parse_items, parse_when, thread_roots


def group_id(world_key: str, channel: str) -> str:
    return "Space " + stable_hex("chat-space", world_key, channel, length=11).upper()


def user_id(world_key: str, email: str) -> str:
    return "User " + str(int(stable_hex("chat-user", world_key, email.lower(), length=24), 16))[:21].rjust(21, "1")


def created_date(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def creator(person: dict) -> dict:
    return {"name": person["name"] or person["email"].split("@")[0], "email": person["email"], "user_type": "Human"}


def chat_message(structured: dict, *, world_key: str, path: str, root: str) -> dict:
    space = group_id(world_key, structured["channel"]).removeprefix("Space ")
    topic = stable_hex("chat-topic", world_key, root, length=11)
    unique = topic if root == path else stable_hex("chat-message", world_key, path, length=11)
    return {
        "creator": creator(structured["from"]),
        "created_date": created_date(parse_when(structured["date"], "date")),
        "text": structured["text"],
        "topic_id": topic,
        "message_id": f"{space}/{topic}/{unique}",
    }


def render_chat_message(content: str, metadata: dict, *, path: str, world_key: str = "") -> bytes:
    structured = parse_chat(content, metadata)
    root = str(metadata.get("thread") or "").strip() or path
    message = chat_message(structured, world_key=world_key, path=path, root=root)
    message["group_id"] = group_id(world_key, structured["channel"])
    message["group_name"] = structured["channel"]
    return (json.dumps(message, indent=2, ensure_ascii=False) + "\n").encode()


def chat_group_messages(items: list[WorldItem], *, world_key: str = "") -> dict[str, dict]:
    """The chat folder of a world: {relative path under .apps_data/chat/: JSON object},
    one group per channel (Groups/<id>/messages.json and group_info.json) and one
    Users/<id>/user_info.json per author."""
    by_path = parse_items(items, parse_chat, "chat message")
    roots = thread_roots(by_path, "chat message")
    for path, root in roots.items():
        if by_path[path][1]["channel"] != by_path[root][1]["channel"]:
            raise RenderError(f"{path}: in channel {by_path[path][1]['channel']!r} but its thread starts in "
                              f"{by_path[root][1]['channel']!r} ({root}); a thread stays in one channel.")
    ordered = sorted(by_path, key=lambda p: (by_path[p][2].astimezone(dt.UTC), p))
    groups: dict[str, dict] = {}
    users: dict[str, dict] = {}
    for path in ordered:
        _item, structured, _when = by_path[path]
        gid = group_id(world_key, structured["channel"])
        group = groups.setdefault(gid, {"name": structured["channel"], "members": [], "messages": []})
        group["messages"].append(chat_message(structured, world_key=world_key, path=path, root=roots[path]))
        person = creator(structured["from"])
        if all(m["email"].lower() != person["email"].lower() for m in group["members"]):
            group["members"].append(person)
        uid = user_id(world_key, person["email"])
        user = users.setdefault(uid, {"user": person, "membership_info": []})
        if all(m["group_id"] != gid for m in user["membership_info"]):
            user["membership_info"].append({"group_name": structured["channel"], "group_id": gid, "membership_state": "MEMBER_JOINED"})
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
