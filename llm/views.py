import os

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from core.exceptions import ApplicationError
from core.views import UNPROCESSABLE
from llm.forms import EndpointForm
from llm.models import ModelCall, ModelEndpoint
from llm.services import endpoint_save


def _endpoint_rows(endpoints) -> list[dict]:
    # Whether the key variable is set is shown; the key never is.
    return [{"endpoint": e, "key_set": bool(e.api_key_env and os.environ.get(e.api_key_env))} for e in endpoints]


@login_required
@require_http_methods(["GET", "POST"])
def model_endpoints(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """Every user sees which models exist; only site admins add or change them."""
    editing = get_object_or_404(ModelEndpoint, pk=pk) if pk else None
    form = EndpointForm(request.POST or None, instance=editing)
    error = None
    if request.method == "POST":
        try:
            if not form.is_valid():
                field, messages = next(iter(form.errors.items()))
                raise ApplicationError(f"{form.fields[field].label if field in form.fields else ''}: {messages[0]}")
            endpoint_save(user=request.user, data=form.cleaned_data, endpoint=editing)
        except ApplicationError as exc:
            error = exc.message
        else:
            return redirect("model-endpoints")
    usage = []
    if request.user.is_staff:
        usage = list(ModelCall.objects.values("endpoint_name", "purpose").annotate(
            calls=Count("id"), errors=Count("id", filter=Q(outcome="error")), input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"), cost=Sum("cost"),
        ).order_by("endpoint_name", "purpose"))
    context = {
        "rows": _endpoint_rows(ModelEndpoint.objects.all()), "form": form, "editing": editing, "error": error,
        "usage": usage, "recent": ModelCall.objects.all()[:50] if request.user.is_staff else [],
    }
    return render(request, "llm/model_endpoints.html", context, status=UNPROCESSABLE if error else 200)
