"""Calendar tools: list by range and attendee, search, read; create and update in the overlay."""

from authoring.models import Document
from tests.workspace.conftest import CALL, HANNAH, PRIYA, SIGNING, TOM
from workspace.models import OverlayEntry


def event_ids(result):
    return [e["id"] for e in result["events"]]


def test_list_events_by_start(run):
    result = run.json("list_events")
    assert result["total"] == 2 and event_ids(result) == [CALL, SIGNING]
    assert result["events"][0] == {
        "id": CALL, "subject": "Weekly diligence call", "start": "2026-03-04T15:00:00+00:00", "end": "2026-03-04T16:00:00+00:00",
        "location": "Video call", "attendees": [PRIYA, HANNAH], "description": "1. Open questions 2. Consents",
    }


def test_list_events_filters_by_date_range_and_attendee(run):
    assert event_ids(run.json("list_events", {"start": "2026-03-05"})) == [SIGNING]
    assert event_ids(run.json("list_events", {"end": "2026-03-04"})) == [CALL]  # a bare end date includes that day
    assert event_ids(run.json("list_events", {"start": "2026-03-04T15:30:00+00:00", "end": "2026-03-10"})) == [CALL]  # overlaps
    assert event_ids(run.json("list_events", {"start": "2026-03-05", "end": "2026-03-14"})) == []
    assert event_ids(run.json("list_events", {"attendee": "tom@"})) == [SIGNING]
    assert event_ids(run.json("list_events", {"attendee": "priya"})) == [CALL, SIGNING]
    assert event_ids(run.json("list_events", {"attendee": "hannah", "start": "2026-03-05"})) == []
    assert "is not a date" in run("list_events", {"start": "soon"}, error=True)


def test_search_and_read_events(run):
    assert event_ids(run.json("search_events", {"query": "diligence"})) == [CALL]
    assert event_ids(run.json("search_events", {"query": "london"})) == [SIGNING]
    assert event_ids(run.json("search_events", {"query": "consents"})) == [CALL]  # description
    assert run.json("read_event", {"id": CALL})["description"] == "1. Open questions\n2. Consents"
    assert run("read_event", {"id": "Calendar/nope"}, error=True).startswith("No event with id 'Calendar/nope'.")


def test_create_event(run, ws, data_room):
    created = run.json("create_event", {"subject": "SPA mark-up review", "start": "2026-03-06T09:00:00+00:00",
                                        "end": "2026-03-06T10:00:00+00:00", "attendees": [PRIYA, "ben@harlowfinch.com"],
                                        "location": "Room 4", "description": "Go through the mark-up."})["created"]
    assert created["id"] == "Calendar/2026-03-06T09-00-00Z spa-mark-up-review"
    entry = OverlayEntry.objects.get(overlay=ws.overlay, path=created["id"])
    assert entry.metadata == {"subject": "SPA mark-up review", "start": "2026-03-06T09:00:00+00:00", "end": "2026-03-06T10:00:00+00:00",
                              "location": "Room 4", "attendees": f"{PRIYA}, ben@harlowfinch.com"}
    assert entry.content == "Go through the mark-up."
    assert event_ids(run.json("list_events")) == [CALL, created["id"], SIGNING]
    assert not Document.objects.filter(world=data_room, path=created["id"]).exists()


def test_create_event_rejects_bad_times(run, ws):
    text = run("create_event", {"subject": "x", "start": "2026-03-06T09:00:00", "end": "2026-03-06T10:00:00"}, error=True)
    assert "has no UTC offset" in text
    text = run("create_event", {"subject": "x", "start": "2026-03-06T10:00:00+00:00", "end": "2026-03-06T09:00:00+00:00"}, error=True)
    assert "is before 'start'" in text
    assert "not a date and time" in run(
        "create_event", {"subject": "x", "start": "next tuesday", "end": "2026-03-06T09:00:00+00:00"}, error=True
    )
    assert not OverlayEntry.objects.filter(overlay=ws.overlay).exists()


def test_update_event_shadows_the_world_event(run, ws, data_room):
    before = Document.objects.get(world=data_room, path=SIGNING)
    updated = run.json("update_event", {"id": SIGNING, "location": "Video call", "attendees": [TOM]})["updated"]
    assert updated["location"] == "Video call" and updated["attendees"] == [TOM]
    assert updated["subject"] == "Signing" and updated["start"] == "2026-03-15T10:00:00+00:00" and updated["description"] == "Sign the SPA."
    entry = OverlayEntry.objects.get(overlay=ws.overlay, path=SIGNING)
    assert entry.action == "upsert" and entry.metadata["location"] == "Video call"
    after = Document.objects.get(world=data_room, path=SIGNING)
    assert (after.metadata, after.content, after.revision) == (before.metadata, before.content, before.revision)
    assert run.json("read_event", {"id": SIGNING})["location"] == "Video call"
    assert run("update_event", {"id": SIGNING}, error=True).startswith("Nothing to change")
    assert "before 'start'" in run("update_event", {"id": SIGNING, "end": "2026-03-15T09:00:00+00:00"}, error=True)


def test_all_day_events_take_days_and_keep_them_on_update(run, ws):
    created = run.json("create_event", {"subject": "Offsite", "start": "2026-03-09", "end": "2026-03-10", "all_day": True})["created"]
    # Shown as the days it takes, the last one included, as given (it is stored as iCalendar has it:
    # to the midnight after the last day, which read as a third day)
    assert (created["start"], created["end"], created["all_day"]) == ("2026-03-09", "2026-03-10", True)
    entry = OverlayEntry.objects.get(overlay=ws.overlay, path=created["id"])
    assert (entry.metadata["start"], entry.metadata["end"]) == ("2026-03-09T00:00:00+00:00", "2026-03-11T00:00:00+00:00")
    assert run.json("read_event", {"id": created["id"]})["end"] == "2026-03-10"
    on = [(day, [e["id"] for e in run.json("list_events", {"start": day, "end": day})["events"]]) for day in
          ("2026-03-08", "2026-03-09", "2026-03-10", "2026-03-11")]
    assert on == [("2026-03-08", []), ("2026-03-09", [created["id"]]), ("2026-03-10", [created["id"]]), ("2026-03-11", [])]
    moved = run.json("update_event", {"id": created["id"], "start": "2026-03-10"})["updated"]  # its last day stays the 10th
    assert (moved["start"], moved["end"]) == ("2026-03-10", "2026-03-10")
    timed = run.json("update_event", {"id": created["id"], "all_day": False, "start": "2026-03-12T09:00:00+00:00",
                                      "end": "2026-03-12T10:00:00+00:00"})["updated"]
    assert "all_day" not in timed and timed["end"] == "2026-03-12T10:00:00+00:00"
    assert "is before the first" in run("create_event", {"subject": "x", "start": "2026-03-09", "end": "2026-03-08", "all_day": True},
                                        error=True)


def _repeat(data_room, path, **metadata):
    event = Document.objects.get(world=data_room, path=path)
    Document.objects.filter(pk=event.pk).update(metadata={**event.metadata, **metadata})


def test_a_repeating_event_is_listed_once_with_how_it_repeats(data_room, run):
    _repeat(data_room, CALL, rrule="FREQ=WEEKLY;COUNT=4")
    listed = run.json("list_events")
    assert event_ids(listed) == [CALL, SIGNING]
    assert listed["events"][0]["repeats"] == "weekly, 4 times" and "series_start" not in listed["events"][0]
    assert run.json("read_event", {"id": CALL})["repeats"] == "weekly, 4 times"
    assert run.json("search_events", {"query": "diligence"})["events"][0]["repeats"] == "weekly, 4 times"


def test_a_date_range_lists_each_occurrence_of_a_repeating_event(data_room, run):
    """An agent asking what is on 18 March is told about the weekly call that started on the
    4th, at the occurrence's own time, and not about weeks after its last occurrence."""
    _repeat(data_room, CALL, rrule="FREQ=WEEKLY;COUNT=4", exdate="2026-03-11T15:00:00+00:00")
    on_18th = run.json("list_events", {"start": "2026-03-18", "end": "2026-03-18"})["events"]
    assert [(e["id"], e["start"], e["end"], e["series_start"]) for e in on_18th] == [
        (CALL, "2026-03-18T15:00:00+00:00", "2026-03-18T16:00:00+00:00", "2026-03-04T15:00:00+00:00")]
    march = run.json("list_events", {"start": "2026-03-01", "end": "2026-03-31"})
    assert [(e["id"], e["start"][:10]) for e in march["events"]] == [
        (CALL, "2026-03-04"), (SIGNING, "2026-03-15"), (CALL, "2026-03-18"), (CALL, "2026-03-25")]  # the 11th is skipped (EXDATE)
    assert event_ids(run.json("list_events", {"start": "2026-03-26"})) == []  # after the 4th and last
    assert event_ids(run.json("list_events", {"end": "2026-03-10"})) == [CALL]
    assert [e["start"][:10] for e in run.json("list_events", {"start": "2026-03-12", "attendee": "hannah"})["events"]] == [
        "2026-03-18", "2026-03-25"]


def test_occurrences_keep_their_local_time_across_summer_time(data_room, run):
    _repeat(data_room, CALL, rrule="FREQ=WEEKLY", tzid="Europe/London", start="2026-03-25T09:00:00+00:00",
            end="2026-03-25T10:00:00+00:00")
    starts = [e["start"] for e in run.json("list_events", {"start": "2026-03-20", "end": "2026-04-02"})["events"]]
    assert starts == ["2026-03-25T09:00:00+00:00", "2026-04-01T09:00:00+01:00"]  # 09:00 in London, before and after 29 March


def test_an_endless_series_is_listed_in_part_and_says_so(data_room, run):
    _repeat(data_room, CALL, rrule="FREQ=DAILY")
    result = run.json("list_events", {"start": "2026-03-05", "limit": 5})
    assert result["total"] == 201 and "first 200 occurrences" in result["note"]  # 200 of the call, and the signing
    assert [e["start"][:10] for e in result["events"]] == ["2026-03-05", "2026-03-06", "2026-03-07", "2026-03-08", "2026-03-09"]


def test_a_rule_that_cannot_be_read_lists_the_event_as_written(data_room, run):
    _repeat(data_room, CALL, rrule="EVERY MONDAY")
    assert event_ids(run.json("list_events", {"start": "2026-03-04", "end": "2026-03-04"})) == [CALL]
    assert event_ids(run.json("list_events", {"start": "2026-03-05", "end": "2026-03-06"})) == []


def test_a_bare_date_is_the_day_on_the_events_own_clock(data_room, run):
    """An event at 17:00-08:00 on 5 March (01:00 on the 6th in UTC) was missing from the 5th."""
    _repeat(data_room, SIGNING, start="2026-03-05T17:00:00-08:00", end="2026-03-05T18:00:00-08:00")
    on = {day: event_ids(run.json("list_events", {"start": day, "end": day})) for day in ("2026-03-05", "2026-03-06")}
    assert on == {"2026-03-05": [SIGNING], "2026-03-06": []}
