import json
import re

import pytest
from icalendar import Calendar

from authoring.rendering import (
    RenderError,
    WorldItem,
    chat_group_messages,
    parse_content,
    render_chat,
    render_file,
    render_ics,
    structured_to_content,
    structured_to_metadata,
)
from tests.rendering.samples import CHATS, EVENTS


def test_chat_groups_follow_the_archipelago_shape():
    files = chat_group_messages(CHATS, world_key="world-7")
    groups = sorted({path.split("/")[1] for path in files if path.startswith("Groups/")})
    assert len(groups) == 2 and all(re.fullmatch(r"Space [0-9A-F]{11}", g) for g in groups)
    infos = {files[f"Groups/{g}/group_info.json"]["name"]: g for g in groups}
    deal = files[f"Groups/{infos['deal-team']}/messages.json"]["messages"]
    assert [m["text"] for m in deal] == ["Kick-off call moved to 10:00", "OK, I'll update the invite", "Anyone seen the QoE report?"]
    code = infos["deal-team"].removeprefix("Space ")
    for m in deal:
        space, topic, _unique = m["message_id"].split("/")
        assert space == code and topic == m["topic_id"]
        assert m["creator"]["user_type"] == "Human"
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", m["created_date"])
    root, reply, other = deal
    assert root["message_id"].split("/")[2] == root["topic_id"]  # a thread root ends with its topic_id
    assert reply["topic_id"] == root["topic_id"] and reply["message_id"].split("/")[2] != reply["topic_id"]
    assert other["topic_id"] != root["topic_id"] and other["message_id"].endswith("/" + other["topic_id"])
    assert deal[0]["created_date"] == "2026-01-05T08:00:00Z"
    members = files[f"Groups/{infos['deal-team']}/group_info.json"]["members"]
    assert [m["email"] for m in members] == ["jane@acme.com", "john@acme.com"]
    users = {path: obj for path, obj in files.items() if path.startswith("Users/")}
    assert len(users) == 3 and all(re.fullmatch(r"Users/User \d{21}/user_info.json", p) for p in users)
    john = next(u for u in users.values() if u["user"]["email"] == "john@acme.com")
    assert john["membership_info"] == [{"group_name": "deal-team", "group_id": infos["deal-team"], "membership_state": "MEMBER_JOINED"}]


def test_chat_json_is_deterministic():
    first = render_chat(CHATS, world_key="world-7")
    assert first == render_chat(list(reversed(CHATS)), world_key="world-7")
    assert json.loads(next(iter(first.values())))


def test_single_chat_message_json_matches_the_group_form():
    reply = CHATS[1]
    rendered = render_file("chat", "", reply.content, reply.metadata, path=reply.path, world_key="world-7")
    assert rendered.filename == "002.json" and rendered.content_type == "application/json"
    message = json.loads(rendered.data)
    grouped = chat_group_messages(CHATS, world_key="world-7")[f"Groups/{message['group_id']}/messages.json"]["messages"]
    assert {k: v for k, v in message.items() if k not in ("group_id", "group_name")} == grouped[1]


def test_chat_round_trip_and_errors():
    structured = parse_content("chat", "", CHATS[0].content, CHATS[0].metadata)
    assert structured == {"channel": "deal-team", "from": {"name": "Jane Doe", "email": "jane@acme.com"},
                          "date": "2026-01-05T09:00:00+01:00", "text": "Kick-off call moved to 10:00"}
    assert (
        parse_content("chat", "", structured_to_content("chat", "", structured), structured_to_metadata("chat", "", structured))
        == structured
    )
    with pytest.raises(RenderError, match="metadata 'channel' is missing"):
        parse_content("chat", "", "x", {**CHATS[0].metadata, "channel": ""})
    moved = WorldItem("Chat/legal/002", "x", {**CHATS[3].metadata, "thread": "Chat/deal-team/001"})
    with pytest.raises(RenderError, match="a thread stays in one channel"):
        chat_group_messages([CHATS[0], moved])


def test_ics_events_carry_every_field_the_calendar_needs():
    data = render_ics(EVENTS, world_key="world-7")
    calendar = Calendar.from_ical(data)
    events = list(calendar.walk("VEVENT"))
    assert len(events) == 2
    for event in events:
        for field in ("UID", "DTSTAMP", "DTSTART", "DTEND", "CREATED", "LAST-MODIFIED", "SUMMARY"):
            assert event.get(field) is not None, field
        assert "DURATION" not in event
    ic = events[0]
    assert str(ic["SUMMARY"]) == "Investment Committee — Project Falcon"
    assert ic.decoded("DTSTART").isoformat() == "2026-01-12T14:00:00+00:00"
    assert ic.decoded("DTEND").isoformat() == "2026-01-12T15:30:00+00:00"
    assert str(ic["LOCATION"]) == "Board room, 5th floor"
    assert "1. Valuation" in str(ic["DESCRIPTION"])
    attendees = ic["ATTENDEE"]
    assert [str(a) for a in attendees] == ["mailto:jane@acme.com", "mailto:john@acme.com"]
    assert [a.params["CN"] for a in attendees] == ["Jane Doe", "Smith, John"]
    assert ic.decoded("CREATED") <= ic.decoded("DTSTART")


def test_ics_is_deterministic_and_single_event_renders():
    assert render_ics(EVENTS, world_key="w") == render_ics(list(reversed(EVENTS)), world_key="w")
    rendered = render_file("event", "", EVENTS[1].content, EVENTS[1].metadata, path=EVENTS[1].path, world_key="w")
    assert rendered.filename == "Signing.ics" and rendered.content_type.startswith("text/calendar")
    (event,) = Calendar.from_ical(rendered.data).walk("VEVENT")
    assert event["UID"] == next(
        e for e in Calendar.from_ical(render_ics(EVENTS, world_key="w")).walk("VEVENT") if str(e["SUMMARY"]) == "SPA signing"
    )["UID"]


def test_event_round_trip():
    item = EVENTS[0]
    structured = parse_content("event", "", item.content, item.metadata)
    assert structured["attendees"][1] == {"name": "Smith, John", "email": "john@acme.com"}
    content = structured_to_content("event", "", structured)
    metadata = structured_to_metadata("event", "", structured)
    assert content == item.content and metadata == item.metadata
    assert parse_content("event", "", content, metadata) == structured


@pytest.mark.parametrize(("change", "message"), [
    ({"start": ""}, "metadata 'start' is missing"),
    ({"end": ""}, "metadata 'end' is missing"),
    ({"end": "2026-01-12T14:00:00+01:00"}, "metadata 'end' .* is before 'start'"),
    ({"start": "2026-13-01T10:00:00+00:00"}, "metadata 'start': .* is not an ISO 8601"),
    ({"subject": ""}, "metadata 'subject' is missing"),
    ({"subject": "x" * 501}, "metadata 'subject' is 501 characters; calendars take at most 500"),
    ({"location": "y" * 501}, "metadata 'location' is 501 characters"),
    ({"attendees": "Jane Doe"}, "metadata 'attendees': 'Jane Doe' is not an email address"),
])
def test_invalid_event_metadata_names_the_field(change, message):
    with pytest.raises(RenderError, match=message):
        parse_content("event", "", "Agenda", {**EVENTS[0].metadata, **change})


def test_overlong_agenda_is_refused():
    with pytest.raises(RenderError, match="at most 8000"):
        render_file("event", "", "z" * 8001, EVENTS[0].metadata, path="e")


def test_a_reply_dated_before_its_root_is_still_its_reply_and_listed_after_it():
    early = WorldItem("Chat/deal-team/009", "Already on it", {**CHATS[1].metadata, "date": "2026-01-05T08:59:00+01:00"})
    files = chat_group_messages([CHATS[0], early])
    (messages,) = [v["messages"] for k, v in files.items() if k.endswith("messages.json")]
    assert [m["text"] for m in messages] == ["Kick-off call moved to 10:00", "Already on it"]
    root, reply = messages
    assert reply["topic_id"] == root["topic_id"] and root["message_id"].endswith("/" + root["topic_id"])
    assert not reply["message_id"].endswith("/" + reply["topic_id"]) and reply["created_date"] < root["created_date"]


def test_imported_chat_ids_are_written_as_they_came():
    kept = {"group_id": "Space AAAAq7Lk2xE", "topic_id": "Tq1Zr9_kP0Q"}
    root = WorldItem("Chat/x/001", "Hi", {**CHATS[0].metadata, **kept, "user_id": "User 104827195739182739182"})
    reply = WorldItem("Chat/x/002", "Hello", {**CHATS[1].metadata, **kept, "thread": "Chat/x/001",
                                              "message_id": "AAAAq7Lk2xE/Tq1Zr9_kP0Q/Vb3Xk2mN8Lw"})
    files = chat_group_messages([root, reply])
    messages = files["Groups/Space AAAAq7Lk2xE/messages.json"]["messages"]
    assert [m["message_id"] for m in messages] == ["AAAAq7Lk2xE/Tq1Zr9_kP0Q/Tq1Zr9_kP0Q", "AAAAq7Lk2xE/Tq1Zr9_kP0Q/Vb3Xk2mN8Lw"]
    assert "Users/User 104827195739182739182/user_info.json" in files
    single = json.loads(render_file("chat", "", reply.content, reply.metadata, path=reply.path).data)
    assert (single["group_id"], single["message_id"]) == ("Space AAAAq7Lk2xE", "AAAAq7Lk2xE/Tq1Zr9_kP0Q/Vb3Xk2mN8Lw")
    looks_like_a_root = WorldItem("Chat/x/002", "Hello", {**reply.metadata, "message_id": "AAAAq7Lk2xE/Tq1Zr9_kP0Q/Tq1Zr9_kP0Q"})
    with pytest.raises(RenderError, match=r"Chat/x/002: metadata 'message_id' .* ends with its topic_id"):
        chat_group_messages([root, looks_like_a_root])
    with pytest.raises(RenderError, match=r"metadata 'group_id': '\.\./\.\./etc' cannot be a folder name"):
        chat_group_messages([WorldItem("Chat/x/003", "x", {**CHATS[0].metadata, "group_id": "../../etc"})])


def test_imported_event_details_are_written_back():
    item = WorldItem("Calendar/standup", "Daily", {
        "subject": "Stand-up", "start": "2026-01-12T09:00:00+01:00", "end": "2026-01-12T09:15:00+01:00",
        "attendees": "Ann <ann@x.test>, Bob <bob@x.test>", "uid": "standup@other.test", "tzid": "Europe/Paris",
        "rrule": "FREQ=WEEKLY;COUNT=4", "exdate": "2026-01-19T09:00:00+01:00", "partstat": "ann@x.test=ACCEPTED"})
    offsite = WorldItem("Calendar/offsite", "", {"subject": "Offsite", "start": "2026-02-10T00:00:00+00:00",
                                                   "end": "2026-02-10T00:00:00+00:00", "all_day": "true"})
    data = render_ics([item, offsite])
    assert b"DTSTART;TZID=Europe/Paris:20260112T090000" in data and b"EXDATE;TZID=Europe/Paris:20260119T090000" in data
    assert b"DTSTART;VALUE=DATE:20260210" in data and b"DTEND;VALUE=DATE:20260211" in data  # a one-day event ends the next day
    events = {str(e["UID"]): e for e in Calendar.from_ical(data).walk("VEVENT")}
    standup = events["standup@other.test"]
    assert standup["RRULE"]["COUNT"] == [4] and "DURATION" not in standup
    assert [(a.params["CN"], a.params.get("PARTSTAT")) for a in standup["ATTENDEE"]] == [("Ann", "ACCEPTED"), ("Bob", None)]
    assert all(e.get(f) is not None for e in events.values() for f in ("DTEND", "CREATED", "LAST-MODIFIED"))
    assert (
        Calendar.from_ical(render_file("event", "", item.content, item.metadata, path=item.path).data).walk("VEVENT")[0]["UID"]
        == "standup@other.test"
    )


@pytest.mark.parametrize(("change", "message"), [
    ({"tzid": "Mars/Olympus"}, "metadata 'tzid': 'Mars/Olympus' is not a time zone name"),
    ({"rrule": "EVERY MONDAY"}, "metadata 'rrule': 'EVERY MONDAY' is not a recurrence rule"),
    ({"exdate": "next week"}, "metadata 'exdate'"),
    ({"partstat": "ann@x.test=MAYBE"}, "metadata 'partstat': 'ann@x.test=MAYBE'"),
    ({"all_day": "sometimes"}, "metadata 'all_day' is 'true' or 'false'"),
])
def test_invalid_kept_event_metadata_names_the_field(change, message):
    with pytest.raises(RenderError, match=message):
        render_ics([WorldItem("Calendar/x", "x", {**EVENTS[0].metadata, **change})])
