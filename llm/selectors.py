from django.db.models import Count, Q, QuerySet, Sum
from django.shortcuts import get_object_or_404

from llm.models import ModelCall, ModelEndpoint


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
