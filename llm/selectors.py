from django.db.models import Count, OuterRef, Q, QuerySet, Subquery, Sum
from django.shortcuts import get_object_or_404

from llm.models import CallOutcome, CallPurpose, EndpointCheck, EndpointCheckStatus, ModelCall, ModelEndpoint


def endpoint_list_usable() -> QuerySet[ModelEndpoint]:
    """Endpoints anyone may pick for drafting, trials or judging (admins configure them)."""
    return ModelEndpoint.objects.filter(enabled=True).order_by("kind", "name")


def endpoint_get_usable(*, pk: int) -> ModelEndpoint:
    return get_object_or_404(endpoint_list_usable(), pk=pk)


def model_call_list(*, project_ids: list[int] | None = None) -> QuerySet[ModelCall]:
    qs = ModelCall.objects.all()
    if project_ids is not None:
        qs = qs.filter(project_id__in=project_ids)
    return qs


def usage_totals_by_project(*, project_ids: list[int]) -> list[dict]:
    return list(
        ModelCall.objects.filter(project_id__in=project_ids)
        .values("project_id", "endpoint_name", "purpose")
        .annotate(
            calls=Count("id"), errors=Count("id", filter=Q(outcome="error")), input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"), cost=Sum("cost"),
        )
        .order_by("project_id", "endpoint_name", "purpose")
    )


# --- Pickers: which endpoint a model select starts on -----------------------------------------

def _with_recent_outcomes(endpoints: QuerySet[ModelEndpoint], *, project_id: int) -> QuerySet[ModelEndpoint]:
    """Each endpoint with its latest call in the project (outcome, when), its latest successful
    one, and its latest finished connection test (status, when): one query, read through the
    (endpoint, project, created_at) index."""
    calls = ModelCall.objects.filter(endpoint=OuterRef("pk"), project_id=project_id).exclude(purpose=CallPurpose.CHECK)
    latest = calls.order_by("-created_at")
    checks = EndpointCheck.objects.filter(endpoint=OuterRef("pk"), finished_at__isnull=False).order_by("-finished_at")
    return endpoints.annotate(
        last_outcome=Subquery(latest.values("outcome")[:1]),
        last_at=Subquery(latest.values("created_at")[:1]),
        last_ok_at=Subquery(calls.filter(outcome=CallOutcome.OK).order_by("-created_at").values("created_at")[:1]),
        check_status=Subquery(checks.values("status")[:1]),
        check_at=Subquery(checks.values("finished_at")[:1]),
    )


def _failing(endpoint: ModelEndpoint) -> bool:
    """Its latest word, a call in the project or a connection test, whichever came last, is a failure."""
    call = (endpoint.last_at, endpoint.last_outcome == CallOutcome.ERROR) if endpoint.last_at else None
    check = (endpoint.check_at, endpoint.check_status == EndpointCheckStatus.FAILED) if endpoint.check_at else None
    latest = max((signal for signal in (call, check) if signal), default=None, key=lambda signal: signal[0])
    return bool(latest and latest[1])


def endpoint_picker(*, project_id: int, prefer: int | None = None) -> list[ModelEndpoint]:
    """The usable endpoints for a model select in a project, each with `is_failing` (its latest
    call in the project, or its latest connection test, failed) and `is_default` on the one the
    select starts on: `prefer` (say, the model the task's last batch was judged by) when it is
    not failing, else the endpoint last used successfully in the project and not failing since,
    else the first one not failing. Never a failing one: when every endpoint fails, none is
    the default and the author chooses."""
    endpoints = list(_with_recent_outcomes(endpoint_list_usable(), project_id=project_id))
    for endpoint in endpoints:
        endpoint.is_failing = _failing(endpoint)
        endpoint.is_default = False
    healthy = [e for e in endpoints if not e.is_failing]
    used = sorted((e for e in healthy if e.last_ok_at), key=lambda e: e.last_ok_at, reverse=True)
    default = next((e for e in healthy if e.pk == prefer), None) or (used[0] if used else None) or (healthy[0] if healthy else None)
    if default is not None:
        default.is_default = True
    elif endpoints:
        endpoints[0].picker_has_no_default = True  # (the select then starts on "Choose a model")
    return endpoints


def endpoint_default(*, project_id: int, prefer: int | None = None) -> ModelEndpoint | None:
    """The endpoint a model select of the project starts on (endpoint_picker), or None."""
    return next((e for e in endpoint_picker(project_id=project_id, prefer=prefer) if e.is_default), None)


# --- Connection tests ---------------------------------------------------------------------------

def endpoint_checks_latest(*, endpoint_ids: list[int]) -> dict[int, EndpointCheck]:
    """Each endpoint's latest connection test (the Models page; endpoints are public to signed-in users)."""
    latest = EndpointCheck.objects.filter(endpoint=OuterRef("endpoint")).order_by("-created_at", "-id").values("pk")[:1]
    checks = EndpointCheck.objects.filter(endpoint_id__in=endpoint_ids, pk=Subquery(latest)).select_related("endpoint")
    return {check.endpoint_id: check for check in checks}


def endpoint_check_get(*, pk: int) -> EndpointCheck:
    return get_object_or_404(EndpointCheck.objects.select_related("endpoint"), pk=pk)
