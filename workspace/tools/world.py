"""The Workspace: one world's data room merged with an overlay, read as Drive, Mail, Chat
and Calendar. The tools, the MCP server and the replica UI all read through it.

Loading is lazy and costs two queries whatever the size of the world: one for the
world's documents and one for the overlay's entries. Writes go through the overlay
services and are applied to the loaded state, so a later read needs no query.
"""

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from authoring.models import Document, DocumentKind, TaskInputFile, World
from authoring.rendering.events import occurrences, repeats_in_words
from workspace.models import Overlay, OverlayAction, OverlayEntry

SEPARATOR = re.compile(r'[,;](?=(?:[^"]*"[^"]*")*[^"]*$)')  # outside double quotes
FAR_FUTURE = dt.datetime.max.replace(tzinfo=dt.UTC)
MAX_OCCURRENCES = 200  # of one repeating event, listed in one range
WIDER_READ = 64  # occurrences a range read a day wider may add (an hourly event, over the 28 hours of offsets)


def overlaps(start: dt.datetime | None, end: dt.datetime | None, since: dt.datetime | None, until: dt.datetime | None) -> bool:
    """Does an event from `start` to `end` (its end excluded, as iCalendar's DTEND: an
    all-day event on the 10th ends at the midnight that starts the 11th) fall in since..until?
    An event with no end, or none after its start, is the moment it starts."""
    if start is None:
        return since is None and until is None
    later_end = end if end is not None and end > start else None
    after_since = since is None or (later_end > since if later_end is not None else start >= since)
    return after_since and (until is None or start <= until)


def parse_date(value: object) -> dt.datetime | None:
    """A metadata date as an aware datetime (a date without offset is taken as UTC);
    None when it is missing or unreadable: world content is read leniently."""
    text = str(value or "").strip()
    if not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def _text(metadata: dict, key: str) -> str:
    value = metadata.get(key)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return " ".join(str(value or "").split())


def _list(value: object) -> list[str]:
    """A comma-separated metadata field (';' is read as a comma too) as a list."""
    items = value if isinstance(value, list) else SEPARATOR.split(str(value or ""))
    return [" ".join(str(v).split()) for v in items if str(v).strip()]


@dataclass(frozen=True)
class Item:
    """One item of the merged data room. `change` is "" for the world's own item,
    "added" or "modified" for an overlay upsert."""

    path: str
    kind: str
    format: str
    content: str
    metadata: dict = field(default_factory=dict)
    change: str = ""

    @property
    def folder(self) -> str:
        return self.path.rpartition("/")[0]

    @property
    def name(self) -> str:
        return self.path.rpartition("/")[2]


@dataclass(frozen=True)
class Email:
    id: str
    sender: str
    to: str
    cc: str
    bcc: str
    subject: str
    date: dt.datetime | None
    date_text: str
    body: str
    thread: str  # the id of the thread's first email (its own id for a first email)
    attachments: list[str]
    folder: str
    change: str


@dataclass(frozen=True)
class ChatMessage:
    id: str
    channel: str
    sender: str
    date: dt.datetime | None
    date_text: str
    text: str
    thread: str  # the id of the thread's first message (its own id for a first message)
    change: str


@dataclass(frozen=True)
class Event:
    id: str
    subject: str
    start: dt.datetime | None
    end: dt.datetime | None
    start_text: str
    end_text: str
    location: str
    attendees: list[str]
    description: str
    change: str
    all_day: bool = False  # start and end are midnights: the first day and the day after the last
    rrule: str = ""  # its recurrence rule (RRULE), "" for a one-off
    # An occurrence of a repeating event (Workspace.events_between): the series' own start,
    # as written; its id is the series' id. "" for the series itself or a one-off.
    series_start: str = ""

    @property
    def repeats(self) -> str:
        """How it repeats, in words ("weekly, 3 times"); "" for a one-off."""
        return repeats_in_words(self.rrule) if self.rrule else ""


def _roots(parents: dict[str, str]) -> dict[str, str]:
    """id → its thread's first id, following 'thread' links within one kind of item. A link
    to an item that is not there (deleted, or of another kind) ends the walk at the link's
    target, so replies to a missing first message still share one thread; a loop is one
    thread named by its smallest id."""
    roots: dict[str, str] = {}
    for start in parents:
        chain = [start]
        current = start
        while parents.get(current) and parents[current] != current:
            parent = parents[current]
            if parent in chain:
                current = min(chain[chain.index(parent):])
                break
            chain.append(parent)
            current = parent
            if current not in parents:
                break
        roots[start] = current
    return roots


def channel_key(channel: str) -> str:
    return " ".join(channel.split()).lstrip("#").lower()


def world_items_of(world_id: int, env_task_id: int | None = None) -> dict[str, Item]:
    """The world's own items (path → item), in the data room's order: one query. With a
    task, its input files are laid over them (one more query): a task file at the path
    of a world item takes its place, the others come after the world's items."""
    world_items: dict[str, Item] = {}
    rows = Document.objects.filter(world_id=world_id).order_by("position", "id")
    for path, kind, fmt, content, metadata in rows.values_list("path", "kind", "format", "content", "metadata"):
        world_items[path] = Item(path, kind, fmt, content, metadata if isinstance(metadata, dict) else {})
    if env_task_id is not None:
        task_files = TaskInputFile.objects.filter(env_task_id=env_task_id).order_by("path", "id")
        for path, fmt, content in task_files.values_list("path", "format", "content"):
            world_items[path] = Item(path, DocumentKind.FILE, fmt, content)
    return world_items


class Workspace:
    """The world's documents merged with the overlay's entries: an upsert shadows or adds,
    a delete hides. With no overlay the workspace is read-only."""

    def __init__(
        self, world: World, overlay: Overlay | None = None, *, world_items: dict[str, Item] | None = None,
        entries: Sequence[OverlayEntry] | None = None,
    ) -> None:
        """`world_items`: the world's own items as world_items_of() reads them, if the caller
        keeps them (they are immutable and shared, never changed here). `entries`: the
        overlay's entries in id order, if the caller has read them (the rollout's claim does,
        in its own round trip); otherwise they are read on first use."""
        if overlay is not None and overlay.world_id != world.pk:
            raise ValueError("The overlay belongs to another world.")
        self.world = world
        self.overlay = overlay
        self._world_items = world_items
        self._entries = entries

    @property
    def writable(self) -> bool:
        return self.overlay is not None

    # --- loading -------------------------------------------------------------------------------

    @cached_property
    def _state(self) -> tuple[dict[str, Item], set[str], dict[str, Item]]:
        """(path → item, the paths the overlay deleted, path → the world's original item)."""
        if self._world_items is not None:
            world_items = self._world_items
        else:  # (a trial run's overlay shows its task's input files, as the agent read them)
            world_items = world_items_of(self.world.pk, self.overlay.env_task_id if self.overlay is not None else None)
        items = dict(world_items)
        deleted: set[str] = set()
        if self.overlay is not None:
            if self._entries is not None:
                rows = [(e.path, e.kind, e.format, e.action, e.content, e.metadata) for e in self._entries]
                self._entries = None
            else:
                entries = OverlayEntry.objects.filter(overlay_id=self.overlay.pk).order_by("id")
                rows = entries.values_list("path", "kind", "format", "action", "content", "metadata")
            for row in rows:
                self._apply(items, deleted, world_items, *row)
        return items, deleted, world_items

    @staticmethod
    def _apply(items, deleted, world_items, path, kind, fmt, action, content, metadata) -> None:
        if action == OverlayAction.DELETE:
            items.pop(path, None)
            if path in world_items:
                deleted.add(path)
            return
        deleted.discard(path)
        items[path] = Item(path, kind, fmt, content, metadata if isinstance(metadata, dict) else {},
                           change="modified" if path in world_items else "added")

    def record(self, entry: OverlayEntry) -> None:
        """Apply an overlay entry just written, so reads see it without reloading."""
        items, deleted, world_items = self._state
        self._apply(items, deleted, world_items, entry.path, entry.kind, entry.format, entry.action, entry.content, entry.metadata)
        self.__dict__.pop("_views", None)

    def forget(self, path: str) -> None:
        """The overlay dropped its entry for `path`: the world's item (if any) shows again."""
        items, deleted, world_items = self._state
        deleted.discard(path)
        items.pop(path, None)
        if path in world_items:
            items[path] = world_items[path]
        self.__dict__.pop("_views", None)

    # --- items ---------------------------------------------------------------------------------

    def items(self) -> list[Item]:
        return list(self._state[0].values())

    def get(self, path: str, kind: str | None = None) -> Item | None:
        item = self._state[0].get(path)
        return item if item is not None and (kind is None or item.kind == kind) else None

    def world_item(self, path: str) -> Item | None:
        return self._state[2].get(path)

    @property
    def deleted_paths(self) -> list[str]:
        return sorted(self._state[1])

    def paths(self, kind: str | None = None) -> list[str]:
        return [i.path for i in self._state[0].values() if kind is None or i.kind == kind]

    # --- files ---------------------------------------------------------------------------------

    def files(self, folder: str = "", *, recursive: bool = True) -> list[Item]:
        prefix = f"{folder}/" if folder else ""
        found = [i for i in self._state[0].values() if i.kind == DocumentKind.FILE and i.path.startswith(prefix)]
        if not recursive:
            found = [i for i in found if i.folder == folder]
        return sorted(found, key=lambda i: i.path.lower())

    def folders(self) -> list[str]:
        """Every folder holding a file, parents included, sorted."""
        found: set[str] = set()
        for item in self._state[0].values():
            if item.kind == DocumentKind.FILE:
                parts = item.path.split("/")[:-1]
                found.update("/".join(parts[: n + 1]) for n in range(len(parts)))
        return sorted(found, key=str.lower)

    # --- mail, chat, calendar ----------------------------------------------------------------

    @cached_property
    def _views(self) -> dict:
        return {}

    def _threaded(self, kind: str) -> tuple[list[Item], dict[str, str]]:
        items = [i for i in self._state[0].values() if i.kind == kind]
        roots = _roots({i.path: _text(i.metadata, "thread") for i in items})
        return items, roots

    def emails(self) -> list[Email]:
        """Every email, oldest first."""
        if "emails" not in self._views:
            items, roots = self._threaded(DocumentKind.EMAIL)
            emails = [
                Email(id=i.path, sender=_text(i.metadata, "from"), to=_text(i.metadata, "to"), cc=_text(i.metadata, "cc"),
                      bcc=_text(i.metadata, "bcc"), subject=_text(i.metadata, "subject"), date=parse_date(i.metadata.get("date")),
                      date_text=_text(i.metadata, "date"), body=i.content, thread=roots[i.path],
                      attachments=_list(i.metadata.get("attachments")), folder=i.folder, change=i.change)
                for i in items
            ]
            self._views["emails"] = sorted(emails, key=lambda e: (e.date or FAR_FUTURE, e.id))
        return self._views["emails"]

    def email(self, id: str) -> Email | None:
        return next((e for e in self.emails() if e.id == id), None)

    def email_thread(self, id: str) -> list[Email]:
        """The whole thread `id` belongs to, oldest first ([] when there is no such email)."""
        email = self.email(id)
        return [e for e in self.emails() if e.thread == email.thread] if email else []

    def chat_messages(self, channel: str | None = None) -> list[ChatMessage]:
        """Chat messages, oldest first, of one channel (matched without '#' and case) or all."""
        if "chat" not in self._views:
            items, roots = self._threaded(DocumentKind.CHAT)
            messages = [
                ChatMessage(id=i.path, channel=_text(i.metadata, "channel"),
                            sender=_text(i.metadata, "from") or _text(i.metadata, "author"),
                            date=parse_date(i.metadata.get("date")), date_text=_text(i.metadata, "date"), text=i.content,
                            thread=roots[i.path], change=i.change)
                for i in items
            ]
            # Oldest first, except that a thread's first message always comes before its replies:
            # a reply stamped earlier than its root (clocks differ, imports keep what they came
            # with) is listed right after the root, as docs/content-format.md says.
            root_date = {m.id: m.date or FAR_FUTURE for m in messages if m.thread == m.id}

            def order(m: ChatMessage) -> tuple:
                after = root_date.get(m.thread, FAR_FUTURE) if m.thread != m.id else None
                date = m.date or FAR_FUTURE
                return (max(date, after) if after is not None else date, m.thread != m.id, date, m.id)

            self._views["chat"] = sorted(messages, key=order)
        messages = self._views["chat"]
        if channel is None:
            return messages
        key = channel_key(channel)
        return [m for m in messages if channel_key(m.channel) == key]

    def chat_message(self, id: str) -> ChatMessage | None:
        return next((m for m in self.chat_messages() if m.id == id), None)

    def chat_thread(self, id: str) -> list[ChatMessage]:
        message = self.chat_message(id)
        return [m for m in self.chat_messages() if m.thread == message.thread] if message else []

    def channels(self) -> list[dict]:
        """[{channel, messages, threads, last_message_at}] by channel name."""
        found: dict[str, dict] = {}
        for m in self.chat_messages():
            entry = found.setdefault(channel_key(m.channel), {"channel": m.channel, "messages": 0, "threads": set(), "last_message_at": ""})
            entry["messages"] += 1
            entry["threads"].add(m.thread)
            entry["last_message_at"] = m.date_text or entry["last_message_at"]
        return [{**e, "threads": len(e["threads"])} for _, e in sorted(found.items())]

    def events(self) -> list[Event]:
        """Every calendar event, by start time."""
        if "events" not in self._views:
            events = [
                Event(id=i.path, subject=_text(i.metadata, "subject"), start=parse_date(i.metadata.get("start")),
                      end=parse_date(i.metadata.get("end")), start_text=_text(i.metadata, "start"), end_text=_text(i.metadata, "end"),
                      location=_text(i.metadata, "location"), attendees=_list(i.metadata.get("attendees")),
                      description=i.content, change=i.change, all_day=_text(i.metadata, "all_day").lower() == "true",
                      rrule=_text(i.metadata, "rrule"))
                for i in self._state[0].values() if i.kind == DocumentKind.EVENT
            ]
            self._views["events"] = sorted(events, key=lambda e: (e.start or FAR_FUTURE, e.id))
        return self._views["events"]

    def event(self, id: str) -> Event | None:
        return next((e for e in self.events() if e.id == id), None)

    def events_between(self, since: dt.datetime | None, until: dt.datetime | None, *, per_series: int = MAX_OCCURRENCES,
                       keep: Callable[[Event], bool] = lambda event: True) -> tuple[list[Event], bool]:
        """The events overlapping since..until (either open) that `keep` keeps, by start time:
        a one-off event once, a repeating one as each of its occurrences in the range (at most
        `per_series` of each). Also whether a series had more occurrences than were kept.
        (`keep` narrows a range read wider, e.g. days on each event's own clock.)"""
        found, cut = [], False
        for event in self.events():
            if event.rrule:
                item = self._state[0][event.id]
                spans = occurrences(item.content, item.metadata, since=since, until=until, limit=per_series + 1 + WIDER_READ)
                if spans is not None:  # (None: a rule it cannot read; the event is then listed as written)
                    kept = [e for e in (replace(event, start=start, end=end, start_text=start.isoformat(), end_text=end.isoformat(),
                                                series_start=event.start_text) for start, end in spans) if keep(e)]
                    cut = cut or len(kept) > per_series
                    found += kept[:per_series]
                    continue
            if overlaps(event.start, event.end, since, until) and keep(event):
                found.append(event)
        return sorted(found, key=lambda e: (e.start or FAR_FUTURE, e.id)), cut
