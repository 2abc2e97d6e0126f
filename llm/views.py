import os
from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.exceptions import ApplicationError
from core.listing import ListSpec, list_page
from core.views import render_with_error
from llm import egress
from llm.forms import EndpointForm
from llm.models import CallOutcome, CallPurpose, EndpointCheck, ModelCall, ModelEndpoint
from llm.selectors import endpoint_check_get, endpoint_checks_latest
from llm.services import endpoint_check_start, endpoint_save, require_staff

PAGE = "llm/model_endpoints.html"
# A test still unfinished this long after the longest its one call may take (the endpoint's
# timeouts) is not polled any more: its worker is missing or stopped.
CHECK_GRACE = timedelta(seconds=60)
SITE_ADMINS_SHOWN = 5
CALL_OUTCOMES = ((CallOutcome.OK.value, "OK"), (CallOutcome.ERROR.value, "Failed"))


def _call_spec() -> ListSpec:
    """The model-call log: 50 a page, newest first; the endpoint filter takes the names calls were made under."""
    names = list(ModelCall.objects.order_by("endpoint_name").values_list("endpoint_name", flat=True).distinct())
    return ListSpec(
        sorts={"time": ("created_at", "id"), "cost": ("cost", "id"), "latency": ("latency_ms", "id")},
        default_sort="-time",
        filters={"endpoint": ("endpoint_name", names), "purpose": ("purpose", CallPurpose.values),
                 "status": ("outcome", [v for v, _ in CALL_OUTCOMES])},
    )


def _endpoint_rows(endpoints) -> list[dict]:
    # Whether an allowed key variable is set is shown; the key never is, nor whether a
    # variable the deployment does not allow exists.
    endpoints = list(endpoints)
    checks = endpoint_checks_latest(endpoint_ids=[e.pk for e in endpoints])
    rows = []
    for e in endpoints:
        allowed = not e.api_key_env or egress.key_variable_allowed(e.api_key_env, listed=settings.MODEL_KEY_VARIABLES)
        rows.append({"endpoint": e, "key_allowed": allowed, "key_set": bool(allowed and e.api_key_env and os.environ.get(e.api_key_env)),
                     **_check_context(checks.get(e.pk))})
    return rows


def _check_context(check: EndpointCheck | None) -> dict:
    stale = False
    if check is not None and not check.is_finished:
        bound = timedelta(seconds=check.endpoint.connect_timeout + check.endpoint.read_timeout) + CHECK_GRACE
        stale = timezone.now() - check.created_at > bound
    return {"check": check, "check_stale": stale, "check_polling": check is not None and not check.is_finished and not stale}


def _site_admin_names() -> list[str]:
    # Who an author asks for a new endpoint: site admins are not project members, so their names are shown here.
    return list(get_user_model().objects.filter(is_staff=True, is_active=True).order_by("username")
                .values_list("username", flat=True)[:SITE_ADMINS_SHOWN])


@require_http_methods(["GET", "POST"])
def model_endpoints(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """Every user sees which models exist; only site admins add or change them."""
    editing = get_object_or_404(ModelEndpoint, pk=pk) if pk else None
    form = EndpointForm(request.POST or None, instance=editing)
    failure: ApplicationError | None = None
    if request.method == "POST":
        try:
            require_staff(request.user)  # before the form: a refusal is a 403 whatever was typed
            if not form.is_valid():
                field, messages = next(iter(form.errors.items()))
                raise ApplicationError(f"{form.fields[field].label if field in form.fields else ''}: {messages[0]}")
            endpoint_save(user=request.user, data=form.cleaned_data, endpoint=editing)
        except ApplicationError as exc:
            failure = exc
        except ValidationError as exc:  # a field the service refused: named as the form names it
            field, messages = next(iter(exc.message_dict.items()))
            failure = ApplicationError(f"{form.fields[field].label if field in form.fields else field}: {messages[0]}")
        else:
            return redirect("model-endpoints")
    usage, calls, spec = [], None, None
    if request.user.is_staff:
        spec = _call_spec()
        calls = list_page(request, ModelCall.objects.all(), spec)
        usage = list(ModelCall.objects.values("endpoint_name", "purpose").annotate(
            calls=Count("id"), errors=Count("id", filter=Q(outcome="error")), input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"), cost=Sum("cost"),
        ).order_by("endpoint_name", "purpose"))
    context = {
        "rows": _endpoint_rows(ModelEndpoint.objects.all()), "form": form, "editing": editing,
        "error": failure.message if failure else None,
        "usage": usage, "calls": calls, "recent": calls.rows if calls else [],
        "call_endpoints": spec.filters["endpoint"][1] if spec else [], "call_purposes": CallPurpose.choices, "call_outcomes": CALL_OUTCOMES,
        "site_admins": [] if request.user.is_staff else _site_admin_names(),
    }
    return render_with_error(request, PAGE, context, failure)


@require_POST
def endpoint_test(request: HttpRequest, pk: int) -> HttpResponse:
    """"Test connection": queue one tiny call (llm.services.endpoint_check_start); the
    fragment that answers polls the result."""
    endpoint = get_object_or_404(ModelEndpoint, pk=pk)
    try:
        check = endpoint_check_start(user=request.user, endpoint=endpoint)
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect("model-endpoints")
        latest = endpoint_checks_latest(endpoint_ids=[endpoint.pk]).get(endpoint.pk)
        context = {"e": endpoint, **_check_context(latest), "check_error": error.message}
        return render_with_error(request, f"{PAGE}#endpoint-check", context, error)
    if not request.htmx:
        messages.info(request, f"Testing {endpoint.name}: the result shows in its row.")
        return redirect("model-endpoints")
    return render(request, f"{PAGE}#endpoint-check", {"e": endpoint, **_check_context(check)})


@require_GET
def endpoint_check_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The polled result of a connection test (site admins, who start them)."""
    if not request.user.is_staff:
        raise PermissionDenied("Only a site admin tests model endpoints.")
    check = endpoint_check_get(pk=pk)
    return render(request, f"{PAGE}#endpoint-check", {"e": check.endpoint, **_check_context(check)})
