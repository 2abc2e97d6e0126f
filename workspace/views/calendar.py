"""Calendar: an agenda grouped by day and a week of seven columns with a week picker.
Times are shown in the offset each event was written with, as the agent reads them."""

import datetime as dt

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from workspace.tools import Event
from workspace.views.common import anchor, people, render_screen, scope_get, zone

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


@require_GET
def calendar(request: HttpRequest, scope: str, pk: int) -> HttpResponse:
    s = scope_get(request, scope, pk)
    events = s.workspace.events()
    view = request.GET.get("view") if request.GET.get("view") in VIEWS else "agenda"
    cards = [_card(e) for e in events]
    try:
        week = _monday(dt.date.fromisoformat(request.GET.get("week", "")))
    except ValueError:
        week = _default_week(events)
    days = [week + dt.timedelta(days=n) for n in range(7)]
    columns = [{"day": day, "cards": [c for c in cards if day in _days(c["event"])]} for day in days]
    agenda: list[dict] = []
    for card in cards:
        day = card["event"].start.date() if card["event"].start else None
        if not agenda or agenda[-1]["day"] != day:
            agenda.append({"day": day, "cards": []})
        agenda[-1]["cards"].append(card)
    context = {
        "scope": s, "app": "calendar", "view": view, "event_total": len(events), "agenda": agenda, "columns": columns,
        "week": week, "week_end": days[-1], "previous_week": week - dt.timedelta(days=7), "next_week": week + dt.timedelta(days=7),
        "week_count": sum(len(c["cards"]) for c in columns), "today": timezone.localdate(),
        "zones": sorted({c["zone"] for c in cards if c["zone"]}),
    }
    return render_screen(request, TEMPLATE, context, partials=("replica-calendar",))
