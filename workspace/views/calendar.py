"""Calendar: an agenda grouped by day and a week of seven columns with a week picker.
Times are shown in the offset each event was written with, as the agent reads them."""

import datetime as dt

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from workspace.forms import EventForm, offset_of
from workspace.tools import Event
from workspace.views.common import Scope, anchor, people, render_screen, scope_get, zone

TEMPLATE = "workspace/replica_calendar.html"
VIEWS = ("agenda", "week")


def _days(event: Event) -> list[dt.date]:
    """The days an event covers (an end at midnight does not cover the next day)."""
    if event.start is None:
        return []
    first = event.start.date()
    last = (
        (event.end - dt.timedelta(microseconds=1)).astimezone(event.start.tzinfo).date() if event.end and event.end > event.start else first
    )
    return [first + dt.timedelta(days=n) for n in range(min((last - first).days, 60) + 1)]


def _card(event: Event) -> dict:
    times = ""
    if event.start and event.all_day:
        last = _days(event)[-1]
        times = "All day" + (f" – {last:%a %d %b}" if last != event.start.date() else "")
        return {"event": event, "times": times, "zone": "", "anchor": anchor(event.id),
                "attendee_names": people(", ".join(event.attendees)), "multi_day": last != event.start.date()}
    if event.start:
        end = event.end.astimezone(event.start.tzinfo) if event.end else None
        same_day = end is not None and end.date() == event.start.date()
        times = event.start.strftime("%H:%M") + (f"–{end.strftime('%H:%M')}" if same_day else
                                                   f" – {end.strftime('%a %d %b, %H:%M')}" if end else "")
    return {"event": event, "times": times, "zone": zone(event.start) if event.start else "", "anchor": anchor(event.id),
            "attendee_names": people(", ".join(event.attendees)), "multi_day": len(_days(event)) > 1}


def _monday(day: dt.date) -> dt.date:
    return day - dt.timedelta(days=day.weekday())


def _default_week(events: list[Event]) -> dt.date:
    """The week of the first changed event (an overlay's news), else of the first event."""
    dated = [e for e in events if e.start]
    changed = [e for e in dated if e.change]
    first = (changed or dated)[0].start.date() if dated else timezone.localdate()
    return _monday(first)


def _usual_zone(events: list[Event]) -> str:
    """The offset most of the world's events are written with: a new event's default."""
    counts: dict[str, int] = {}
    for event in events:
        if event.start is not None and not event.all_day:
            counts[offset_of(event.start)] = counts.get(offset_of(event.start), 0) + 1
    return max(counts, key=lambda z: (counts[z], z == "+00:00")) if counts else "+00:00"


@require_GET
def calendar(request: HttpRequest, scope: str, pk: int) -> HttpResponse:
    return calendar_screen(request, scope_get(request, scope, pk), request.GET)


def calendar_screen(request: HttpRequest, s: Scope, params, *, status: int = 200, event_form=None, editing: str = "",
                    error: str = "", notice: str = "") -> HttpResponse:
    """The agenda or a week as `params` asks for it; in a sandbox, with the form to add an
    event (params "new") or edit one (params "edit": its id) above it."""
    events = s.workspace.events()
    view = params.get("view") if params.get("view") in VIEWS else "agenda"
    cards = [_card(e) for e in events]
    try:
        week = _monday(dt.date.fromisoformat(params.get("week", "")))
    except ValueError:
        week = _default_week(events)
    days = [week + dt.timedelta(days=n) for n in range(7)]
    # A repeating event in each day it occurs on (read a day wider each side: a day is the
    # event's own, in the offset it was written with).
    around = [dt.datetime.combine(day, dt.time(), dt.UTC) for day in (week - dt.timedelta(days=1), week + dt.timedelta(days=8))]
    in_week = [_card(e) for e in s.workspace.events_between(*around)[0]]
    columns = [{"day": day, "cards": [c for c in in_week if day in _days(c["event"])]} for day in days]
    agenda: list[dict] = []
    for card in cards:
        day = card["event"].start.date() if card["event"].start else None
        if not agenda or agenda[-1]["day"] != day:
            agenda.append({"day": day, "cards": []})
        agenda[-1]["cards"].append(card)
    writable = s.is_sandbox and s.can_author
    editing = editing or params.get("edit", "")
    edited = s.workspace.event(editing) if writable and editing else None
    if editing and edited is None:
        event_form = None  # gone (deleted meanwhile): never offer its fields as a new event
    if writable and event_form is None:
        if edited is not None:
            event_form = EventForm(initial=EventForm.initial_for(edited))
        elif params.get("new"):
            event_form = EventForm(initial={"zone": _usual_zone(events), "start_date": week})
    context = {
        "scope": s, "app": "calendar", "view": view, "event_total": len(events), "agenda": agenda, "columns": columns,
        "week": week, "week_end": days[-1], "previous_week": week - dt.timedelta(days=7), "next_week": week + dt.timedelta(days=7),
        "week_count": sum(len(c["cards"]) for c in columns), "today": timezone.localdate(),
        "zones": sorted({c["zone"] for c in cards if c["zone"]}),
        "writable": writable, "event_form": event_form if writable else None, "edited": edited, "error": error, "notice": notice,
        "missing_event": editing if writable and editing and edited is None else "",
    }
    return render_screen(request, TEMPLATE, context, partials=("replica-calendar",), status=status)
