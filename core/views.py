"""Small helpers shared by the HTML views of every app."""

from django import forms
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views import defaults

from core.exceptions import ApplicationError, PermissionRefused, StaleEditError

UNPROCESSABLE = 422
CONFLICT = 409
FORBIDDEN = 403
# Marks a 403 whose body is the form or fragment that says why, so static/js/app.js swaps
# it like a 422. Any other 403 (a failed CSRF check after the session expired) is not
# swapped: the page shows its generic "reload and sign in again" message instead.
REFUSAL_HEADER = "Taskwright-Refusal"


def error_status(error: ApplicationError) -> int:
    """403 when the user's role may not do it, 409 for a stale edit, 422 for any other rule."""
    if isinstance(error, PermissionRefused):
        return FORBIDDEN
    if isinstance(error, StaleEditError):
        return CONFLICT
    return UNPROCESSABLE


def render_with_error(request: HttpRequest, template: str, context: dict, error: ApplicationError | None) -> HttpResponse:
    """Render a form (page or htmx fragment) that shows `error`'s message wherever the
    context put it: 200 with no error, else the status the error answers."""
    response = render(request, template, context, status=error_status(error) if error else 200)
    if isinstance(error, PermissionRefused):
        response[REFUSAL_HEADER] = "1"
    return response


def render_error(request: HttpRequest, template: str, context: dict, error: ApplicationError) -> HttpResponse:
    """Re-render a form (page or htmx fragment) with the service's message.

    A stale edit answers 409 and carries the saved values and a diff; a refused
    permission answers 403; any other rule violation answers 422. htmx swaps all three
    (base.html, static/js/app.js), so the user's text stays on screen next to the message.
    """
    context = {**context, "error": error.message, "conflict": error.extra if isinstance(error, StaleEditError) else None}
    if isinstance(error, StaleEditError):
        _at_current_revision(context, error.extra)
    return render_with_error(request, template, context, error)


def _at_current_revision(context: dict, conflict: dict) -> None:
    """The form shown again after a stale edit carries the stored revision, so that saving
    again (the user has now seen the other changes) saves their version over it; with the
    revision they first sent, every further save would be refused the same way. Only a
    form whose `revision_of` names the object that changed: a task form is not moved to the
    rubric's revision when it was the rubric that changed."""
    for form in context.values():
        if (isinstance(form, forms.BaseForm) and form.is_bound and "revision" in form.fields
                and getattr(form, "revision_of", None) == conflict.get("model")):
            data = form.data.copy()
            data[form.add_prefix("revision")] = str(conflict["current_revision"])
            form.data = data


def htmx_or_redirect(request: HttpRequest, template: str, context: dict, to: str, *args, **kwargs) -> HttpResponse:
    """An htmx POST gets the updated fragment; a plain form POST is redirected."""
    if request.htmx:
        return render(request, template, context)
    return redirect(to, *args, **kwargs)


# --- Error pages: JSON under /api/ -------------------------------------------------------
# config.urls names these as Django's handler400/403/404/500. Under /api/ (and /mcp/) every
# error is a JSON body like the API's own ({"detail": ...}), also when Django answers before
# any API view runs: a URL no route matches, a malformed path segment, a refused Host.

def _is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(("/api/", "/mcp/"))


def _json_error(status: int, detail: str) -> HttpResponse:
    return JsonResponse({"detail": detail}, status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return _json_error(400, "Bad request.")
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return _json_error(403, "You do not have permission to perform this action.")
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return _json_error(404, "Not found.")
    return defaults.page_not_found(request, exception)


def api_not_found(request: HttpRequest) -> HttpResponse:
    """An address under /api/ that names no endpoint."""
    return _json_error(404, f"No API endpoint at {request.path}. The endpoints are listed at /api/docs/.")


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return _json_error(500, "Server error.")
    return defaults.server_error(request)
