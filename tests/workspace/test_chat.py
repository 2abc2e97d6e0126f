"""Chat tools: channels, history, threads, search; post and reply into the overlay."""

import re

from authoring.models import Document, DocumentKind
from tests.workspace.conftest import CHAT_FINANCE, CHAT_OTHER, CHAT_REPLY, CHAT_ROOT, PRIYA
from workspace.models import OverlayEntry


def message_ids(result):
    return [m["id"] for m in result["messages"]]


def test_list_channels(run):
    assert run.json("list_channels") == {"total": 2, "offset": 0, "channels": [
        {"channel": "#deal-team", "messages": 3, "threads": 2, "last_message_at": "2026-03-03T09:00:00+00:00"},
        {"channel": "finance", "messages": 1, "threads": 1, "last_message_at": "2026-03-01T16:00:00+00:00"},
    ]}


def test_read_channel_oldest_first_with_threads_marked(run):
    result = run.json("read_channel", {"channel": "Deal-Team"})  # '#' and case do not matter
    assert result["channel"] == "#deal-team"
    assert result["messages"] == [
        {"id": CHAT_ROOT, "from": "Ben Osei <ben@harlowfinch.com>", "date": "2026-03-02T11:05:00+00:00",
         "text": "The Reading lease needs landlord consent.", "replies": 1},
        {"id": CHAT_REPLY, "from": PRIYA, "date": "2026-03-02T11:20:00+00:00", "text": "Thanks, I will ask Kestrel.",
         "reply_to": CHAT_ROOT},
        {"id": CHAT_OTHER, "from": "Ben Osei <ben@harlowfinch.com>", "date": "2026-03-03T09:00:00+00:00",
         "text": "SPA mark-up is due Friday."},
    ]
    assert "earlier_messages" not in result


def test_read_channel_limit_and_before(run):
    latest = run.json("read_channel", {"channel": "#deal-team", "limit": 1})
    assert message_ids(latest) == [CHAT_OTHER] and latest["earlier_messages"] == 2
    assert latest["note"] == f'Call read_channel with before="{CHAT_OTHER}" for earlier messages.'
    assert message_ids(run.json("read_channel", {"channel": "#deal-team", "before": CHAT_OTHER})) == [CHAT_ROOT, CHAT_REPLY]
    assert message_ids(run.json("read_channel", {"channel": "#deal-team", "before": "2026-03-02T11:10:00+00:00"})) == [CHAT_ROOT]
    assert "not a date and time" in run("read_channel", {"channel": "#deal-team", "before": "yesterday"}, error=True)


def test_unknown_channel_lists_the_channels(run):
    assert run("read_channel", {"channel": "general"}, error=True) == "No channel 'general'. Channels: #deal-team, finance."


def test_read_chat_thread_from_any_message(run):
    for member in (CHAT_ROOT, CHAT_REPLY):
        result = run.json("read_chat_thread", {"id": member})
        assert result["thread"] == CHAT_ROOT and result["channel"] == "#deal-team"
        assert message_ids(result) == [CHAT_ROOT, CHAT_REPLY]
    assert message_ids(run.json("read_chat_thread", {"id": CHAT_FINANCE})) == [CHAT_FINANCE]
    assert run("read_chat_thread", {"id": "Chat/deal-team/nope"}, error=True).startswith("No chat message with id")


def test_search_chat(run):
    assert message_ids(run.json("search_chat", {"query": "KESTREL"})) == [CHAT_REPLY]
    assert message_ids(run.json("search_chat", {"query": "ben osei"})) == [CHAT_OTHER, CHAT_ROOT]  # newest first, by author
    assert message_ids(run.json("search_chat", {"query": "cap table"})) == [CHAT_FINANCE]
    assert run.json("search_chat", {"query": "cap table", "channel": "deal-team"})["matches"] == 0
    assert run.json("search_chat", {"query": "lease"})["messages"][0]["channel"] == "#deal-team"


def test_post_message_goes_to_the_overlay_as_the_actor(run, ws, data_room):
    result = run.json("post_message", {"channel": "FINANCE", "text": "Payments reconciled."})
    path = result["posted"]
    assert re.fullmatch(r"Chat/finance/\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ agent", path)
    entry = OverlayEntry.objects.get(overlay=ws.overlay, path=path)
    assert entry.kind == DocumentKind.CHAT and entry.content == "Payments reconciled."
    assert entry.metadata["channel"] == "finance" and entry.metadata["from"] == "Agent <agent@taskwright.invalid>"
    assert entry.metadata["date"].endswith("+00:00") and "thread" not in entry.metadata
    assert not Document.objects.filter(world=data_room, path=path).exists()
    assert message_ids(run.json("read_channel", {"channel": "finance"})) == [CHAT_FINANCE, path]
    assert run("post_message", {"channel": "random", "text": "hi"}, error=True).startswith("No channel 'random'.")


def test_reply_message_joins_the_thread(run, ws):
    result = run.json("reply_message", {"id": CHAT_REPLY, "text": "Kestrel replied: consent in 2 weeks."})
    assert result["reply_to"] == CHAT_ROOT and result["channel"] == "#deal-team"
    entry = OverlayEntry.objects.get(overlay=ws.overlay, path=result["posted"])
    assert entry.metadata["thread"] == CHAT_ROOT and entry.metadata["channel"] == "#deal-team"
    assert message_ids(run.json("read_chat_thread", {"id": CHAT_ROOT})) == [CHAT_ROOT, CHAT_REPLY, result["posted"]]
    assert run.json("list_channels")["channels"][0]["messages"] == 4


def test_a_reply_stamped_before_its_root_is_listed_after_it(data_room, run):
    """Clocks differ and imports keep their timestamps: a reply dated 10:50 to a message of 11:05
    was listed first, above the message it answers."""
    reply = Document.objects.get(world=data_room, path=CHAT_REPLY)
    Document.objects.filter(pk=reply.pk).update(metadata={**reply.metadata, "date": "2026-03-02T10:50:00+00:00"})
    assert message_ids(run.json("read_chat_thread", {"id": CHAT_REPLY})) == [CHAT_ROOT, CHAT_REPLY]
    assert message_ids(run.json("read_channel", {"channel": "#deal-team"})) == [CHAT_ROOT, CHAT_REPLY, CHAT_OTHER]


def test_many_channels_and_search_hits_page_by_offset(data_room, run):
    """150 channels were cut mid-JSON at 16,000 characters, and the note offered "a smaller
    limit, a page", which list_channels did not take; search_chat stopped at 20."""
    Document.objects.bulk_create([
        Document(world=data_room, position=100 + n, path=f"Chat/matter-{n:03d}/note", kind=DocumentKind.CHAT,
                 content=f"Rent review note {n}.",
                 metadata={"channel": f"matter-{n:03d}-landlord-consent-and-rent-review", "from": PRIYA,
                           "date": f"2026-03-{1 + n % 28:02d}T09:00:00+00:00"})
        for n in range(150)])
    channels, offset = [], 0
    while offset is not None:
        page = run.json("list_channels", {"offset": offset})  # valid JSON: never cut in the middle
        channels += [c["channel"] for c in page["channels"]]
        offset = page.get("next_offset")
    assert len(channels) == 152 == len(set(channels))
    hits, offset = [], 0
    while offset is not None:
        page = run.json("search_chat", {"query": "rent review", "offset": offset})
        hits += [m["id"] for m in page["messages"]]
        offset = page.get("next_offset")
    assert len(hits) == 150 == len(set(hits))
