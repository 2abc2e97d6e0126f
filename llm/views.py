import os

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Count, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_http_methods

from core.exceptions import ApplicationError
from core.views import render_with_error
from llm import egress
from llm.forms import EndpointForm
from llm.models import ModelCall, ModelEndpoint
from llm.services import endpoint_save, require_staff


def _endpoint_rows(endpoints) -> list[dict]:
    # Whether an allowed key variable is set is shown; the key never is, nor whether a
    # variable the deployment does not allow exists.
    rows = []
    for e in endpoints:
        allowed = not e.api_key_env or egress.key_variable_allowed(e.api_key_env, listed=settings.MODEL_KEY_VARIABLES)
        rows.append({"endpoint": e, "key_allowed": allowed, "key_set": bool(allowed and e.api_key_env and os.environ.get(e.api_key_env))})
    return rows


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
    usage = []
    if request.user.is_staff:
        usage = list(ModelCall.objects.values("endpoint_name", "purpose").annotate(
            calls=Count("id"), errors=Count("id", filter=Q(outcome="error")), input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"), cost=Sum("cost"),
        ).order_by("endpoint_name", "purpose"))
    context = {
        "rows": _endpoint_rows(ModelEndpoint.objects.all()), "form": form, "editing": editing,
        "error": failure.message if failure else None,
        "usage": usage, "recent": ModelCall.objects.all()[:50] if request.user.is_staff else [],
    }
    return render_with_error(request, "llm/model_endpoints.html", context, failure)
