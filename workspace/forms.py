"""The forms of a sandbox's apps: what a person types, checked field by field before the
agent's tools see it (the tools check again, and their refusal is shown above the form)."""

import datetime as dt

from django import forms

from authoring.extraction import FORMATS as UPLOAD_FORMATS
from authoring.rendering.base import RenderError
from authoring.rendering.headers import OUTSIDE_QUOTES_COMMA, parse_addresses
from workspace.tools.calendar import MAX_DESCRIPTION
from workspace.tools.chat import MAX_TEXT
from workspace.tools.files import MAX_WRITE_CHARS
from workspace.tools.mail import MAX_BODY
from workspace.tools.world import Event

MAX_ADDRESSES = 50
# UTC offsets as the replica shows them: every whole hour, and the half and three-quarter
# hours places keep (India, Nepal, Newfoundland, the Chathams …).
OFFSET_MINUTES = sorted({h * 60 for h in range(-12, 15)} | {-570, -210, 210, 270, 330, 345, 390, 525, 570, 630, 765, 825})


def offset_label(minutes: int) -> str:
    if not minutes:
        return "UTC"
    return f"UTC{'+' if minutes > 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def offset_value(minutes: int) -> str:
    return f"{'+' if minutes >= 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _minutes(value: str) -> int:
    return int(value[0] + "1") * (int(value[1:3]) * 60 + int(value[4:6]))


def offset_of(when: dt.datetime) -> str:
    return offset_value(int((when.utcoffset() or dt.timedelta()).total_seconds() // 60))


ZONE_CHOICES = [(offset_value(m), offset_label(m)) for m in OFFSET_MINUTES]
ZONE_VALUES = {value for value, _ in ZONE_CHOICES}


class AddressListField(forms.CharField):
    """'Priya Raman <p.raman@x.com>, tom@y.com' → a list of addresses, each checked."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("max_length", 5_000)
        kwargs.setdefault("help_text", "Name <name@example.com> or name@example.com; several separated by commas.")
        super().__init__(**kwargs)

    def clean(self, value):
        text = super().clean(value)
        addresses = [entry.strip() for entry in OUTSIDE_QUOTES_COMMA.split(text or "") if entry.strip()]
        if self.required and not addresses:
            raise forms.ValidationError("Give at least one address.")
        if len(addresses) > MAX_ADDRESSES:
            raise forms.ValidationError(f"At most {MAX_ADDRESSES} addresses.")
        for address in addresses:
            try:
                parse_addresses(address, "to")
            except RenderError:
                raise forms.ValidationError(f"“{address}” is not an email address: write Name <name@example.com> or "
                                            "name@example.com.") from None
        return addresses


def text_area(rows: int) -> forms.Textarea:
    return forms.Textarea(attrs={"rows": rows})


class EmailComposeForm(forms.Form):
    to = AddressListField(label="To")
    cc = AddressListField(label="Cc", required=False, help_text="Optional.")
    subject = forms.CharField(label="Subject", max_length=500)
    body = forms.CharField(label="Message", required=False, max_length=MAX_BODY, widget=text_area(8), strip=False)


class EmailReplyForm(forms.Form):
    body = forms.CharField(label="Your reply", max_length=MAX_BODY, widget=text_area(5), strip=False)
    reply_all = forms.BooleanField(label="Reply to all (also to everyone else it was sent or copied to)", required=False)


class ChatPostForm(forms.Form):
    text = forms.CharField(label="Message", max_length=MAX_TEXT, widget=text_area(3))


class ChatReplyForm(forms.Form):
    text = forms.CharField(label="Your reply", max_length=MAX_TEXT, widget=text_area(2))


class EventForm(forms.Form):
    subject = forms.CharField(label="Title", max_length=500)
    all_day = forms.BooleanField(label="All day", required=False)
    start_date = forms.DateField(label="Starts on", widget=forms.DateInput(attrs={"type": "date"}))
    start_time = forms.TimeField(label="Start time", required=False, widget=forms.TimeInput(attrs={"type": "time"}),
                                 help_text="Not needed for an all-day event.")
    end_date = forms.DateField(label="Ends on", required=False, widget=forms.DateInput(attrs={"type": "date"}),
                               help_text="Empty: the day it starts.")
    end_time = forms.TimeField(label="End time", required=False, widget=forms.TimeInput(attrs={"type": "time"}))
    zone = forms.ChoiceField(label="Time zone", choices=ZONE_CHOICES, initial="+00:00",
                             help_text="The offset the times are written with, as the calendar shows them.")
    location = forms.CharField(label="Where", required=False, max_length=500)
    attendees = AddressListField(label="Attendees", required=False)
    description = forms.CharField(label="Agenda or description", required=False, max_length=MAX_DESCRIPTION, widget=text_area(4),
                                  help_text="Markdown.")

    def clean(self) -> dict:
        data = super().clean()
        first, last = data.get("start_date"), data.get("end_date") or data.get("start_date")
        if first is None or "zone" not in data:
            return data
        if data.get("all_day"):
            if last < first:
                self.add_error("end_date", "The last day is before the first.")
            else:
                data["start"], data["end"] = first.isoformat(), last.isoformat()
            return data
        for field in ("start_time", "end_time"):
            if data.get(field) is None and field not in self.errors:
                self.add_error(field, "Give a time, or tick All day.")
        if self.errors:
            return data
        zone = dt.timezone(dt.timedelta(minutes=_minutes(data["zone"])))
        start = dt.datetime.combine(first, data["start_time"].replace(second=0, microsecond=0), zone)
        end = dt.datetime.combine(last, data["end_time"].replace(second=0, microsecond=0), zone)
        if end < start:
            self.add_error("end_time", "The end is before the start.")
        else:
            data["start"], data["end"] = start.isoformat(), end.isoformat()
        return data

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        zone = self.initial.get("zone")
        if zone and zone not in ZONE_VALUES:  # an event written with an unusual offset keeps it
            self.fields["zone"].choices = sorted([*ZONE_CHOICES, (zone, offset_label(_minutes(zone)))], key=lambda c: _minutes(c[0]))

    @classmethod
    def initial_for(cls, event: Event) -> dict:
        """The form's fields for an existing event, in the offset it was written with."""
        initial = {"subject": event.subject, "location": event.location, "attendees": ", ".join(event.attendees),
                   "description": event.description, "all_day": event.all_day}
        if event.start is not None:
            end = event.end.astimezone(event.start.tzinfo) if event.end else event.start
            if event.all_day:
                end = max(end - dt.timedelta(days=1), event.start)
            initial.update(start_date=event.start.date(), end_date=end.date(), zone=offset_of(event.start))
            if not event.all_day:
                initial.update(start_time=event.start.strftime("%H:%M"), end_time=end.strftime("%H:%M"))
        return initial


class FileUploadForm(forms.Form):
    file = forms.FileField(label="File", widget=forms.ClearableFileInput(attrs={"accept": ",".join(f".{f}" for f in UPLOAD_FORMATS)}),
                           help_text="Word, Excel, PowerPoint, PDF, CSV, Markdown or text; an email (.eml), "
                           "mailbox (.mbox) or calendar (.ics) becomes its messages or events.")
    folder = forms.CharField(label="Folder", required=False, max_length=300,
                             help_text="Empty: Uploads (a mailbox's messages or a calendar's events: "
                                       "a folder named after the file, in Uploads).")


class FileEditForm(forms.Form):
    content = forms.CharField(label="Content", required=False, max_length=MAX_WRITE_CHARS, widget=text_area(18), strip=False)
