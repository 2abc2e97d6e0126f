"""Small helpers shared by the HTML views of every app."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from core.exceptions import ApplicationError, StaleEditError

UNPROCESSABLE = 422
CONFLICT = 409


def render_error(request: HttpRequest, template: str, context: dict, error: ApplicationError) -> HttpResponse:
    """Re-render a form (page or htmx fragment) with the service's message.

    A stale edit answers 409 and carries the saved values and a diff; any other rule
    violation answers 422. htmx is configured (base.html) to swap both, so the user's
    text stays on screen next to the message.
    """
    context = {**context, "error": error.message, "conflict": error.extra if isinstance(error, StaleEditError) else None}
    status = CONFLICT if isinstance(error, StaleEditError) else UNPROCESSABLE
    return render(request, template, context, status=status)


def htmx_or_redirect(request: HttpRequest, template: str, context: dict, to: str, *args, **kwargs) -> HttpResponse:
    """An htmx POST gets the updated fragment; a plain form POST is redirected."""
    if request.htmx:
        return render(request, template, context)
    return redirect(to, *args, **kwargs)
