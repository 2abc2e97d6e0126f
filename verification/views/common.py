"""Small helpers the quality views share."""

import json

from django import forms
from django.http import HttpResponse

from core.exceptions import ApplicationError


def form_error(form: forms.Form) -> ApplicationError:
    """The form's first error as the message the user reads ("Label: what is wrong")."""
    field, errors = next(iter(form.errors.items()))
    label = "" if field == "__all__" else f"{form.fields[field].label or field.replace('_', ' ').capitalize()}: "
    return ApplicationError(f"{label}{errors[0]}")


def with_trigger(response: HttpResponse, *events: str) -> HttpResponse:
    """Tell the page (htmx) that something other fragments show has changed: they listen
    for the event and reload themselves (STYLE: one fragment per answer, events for the rest)."""
    if events:
        # After the swap: a listener may read what the answer just put on the page.
        response["HX-Trigger-After-Swap"] = json.dumps(dict.fromkeys(events, True))
    return response
