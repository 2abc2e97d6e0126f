"""Model endpoints and the model-call log through the API.

Who sees what:
- endpoints: every signed-in user lists them (to pick one for drafting) and sees name, kind,
  model, whether it is the scripted sample model, and whether it is enabled. Site admins
  (staff) also see the configuration: base URL, the *name* of the key variable and whether
  it is set on this server, limits and prices. The key itself is never read into an answer.
- only staff create or change endpoints (403 for anyone else; the service checks again).
- the model-call log is per project, so it lives with the project-scoped APIs
  (authoring/apis/usage.py): llm imports only core.
"""

import os

from django.conf import settings
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import SAFE_METHODS, BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from core.apis import ERRORS, ID_PARAMETER, ApiView, DetailSerializer, InvalidRequest
from llm import egress, selectors
from llm.models import EndpointKind, ModelEndpoint
from llm.services import FIELDS, endpoint_save

STAFF_ONLY = "Only a site admin can configure model endpoints."
KIND_HELP = "openai_compatible (OpenAI, vLLM, SGLang, Ollama, llama.cpp, OpenRouter …), anthropic, or scripted (sample answers, no model)."


class StaffWrites(BasePermission):
    message = STAFF_ONLY

    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS or bool(request.user and request.user.is_staff)


# --- Serializers -----------------------------------------------------------------------

class EndpointSerializer(serializers.Serializer):
    """What every signed-in user sees of an endpoint."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField(help_text=KIND_HELP)
    model = serializers.CharField(help_text="The provider's model name.")
    is_scripted = serializers.BooleanField(help_text="The scripted sample model: canned answers, not a real model.")
    enabled = serializers.BooleanField()


class EndpointAdminSerializer(EndpointSerializer):
    """What a site admin sees: the configuration, never the key. The schema marks these
    fields optional (required=False): everyone else gets only EndpointSerializer's."""

    base_url = serializers.CharField(required=False)
    api_key_env = serializers.CharField(required=False, help_text="The NAME of the environment variable holding the key (never the key).")
    key_allowed = serializers.BooleanField(
        required=False,
        help_text="Whether this deployment allows that variable as a model key (names starting with TASKWRIGHT_MODEL_KEY_, or "
        "listed in the server's MODEL_KEY_VARIABLES). A call through an endpoint whose variable is not allowed fails, sending nothing."
    )
    key_set = serializers.BooleanField(
        required=False,
        help_text="Whether that variable is set on this server (always false for a variable that is not allowed)."
    )
    max_concurrency = serializers.IntegerField(required=False)
    connect_timeout = serializers.FloatField(required=False)
    read_timeout = serializers.FloatField(required=False)
    max_retries = serializers.IntegerField(required=False)
    stream = serializers.BooleanField(required=False)
    price_input_per_mtok = serializers.DecimalField(required=False, max_digits=10, decimal_places=4)
    price_output_per_mtok = serializers.DecimalField(required=False, max_digits=10, decimal_places=4)
    created_at = serializers.DateTimeField(required=False)
    updated_at = serializers.DateTimeField(required=False)


# Documented as a plain string: `kind` is also a document's field, and one enum per name
# keeps the schema free of naming collisions.
@extend_schema_field({"type": "string", "description": KIND_HELP})
class KindField(serializers.ChoiceField):
    pass


class EndpointWriteSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    kind = KindField(choices=EndpointKind.choices)
    base_url = serializers.CharField(
        max_length=200, allow_blank=True, default="",
        help_text="e.g. https://api.openai.com/v1. Its host must resolve to public addresses unless the server sets "
        "MODEL_ALLOW_PRIVATE_NETWORKS (400 naming base_url).",
    )
    model = serializers.CharField(max_length=200, allow_blank=True, default="")
    api_key_env = serializers.CharField(
        max_length=100, allow_blank=True, default="",
        help_text="The NAME of the environment variable holding the key, e.g. TASKWRIGHT_MODEL_KEY_OPENAI, or OPENAI_API_KEY where "
        "the server's MODEL_KEY_VARIABLES lists it. Never the key itself: it is refused. A variable the deployment does not allow "
        "is refused too (400 naming api_key_env).",
    )
    max_concurrency = serializers.IntegerField(
        min_value=1, max_value=1000, default=4, help_text="Calls in flight at once, across every worker."
    )
    connect_timeout = serializers.FloatField(min_value=0.1, max_value=600, default=10.0, help_text="Seconds.")
    read_timeout = serializers.FloatField(min_value=0.1, max_value=3600, default=120.0, help_text="Seconds.")
    max_retries = serializers.IntegerField(min_value=0, max_value=10, default=4)
    stream = serializers.BooleanField(default=False, help_text="Ask for answers as a stream of events (where the provider offers it).")
    price_input_per_mtok = serializers.DecimalField(
        max_digits=10, decimal_places=4, min_value=0, default=0, help_text="$ per million input tokens."
    )
    price_output_per_mtok = serializers.DecimalField(
        max_digits=10, decimal_places=4, min_value=0, default=0, help_text="$ per million output tokens."
    )
    enabled = serializers.BooleanField(default=True)


def _endpoint_data(endpoint: ModelEndpoint, user) -> dict:
    if not user.is_staff:
        return EndpointSerializer(endpoint).data
    # Whether an allowed variable is set is said; its value is never read into the answer, and
    # of a variable the deployment does not allow not even whether it exists.
    endpoint.key_allowed = not endpoint.api_key_env or egress.key_variable_allowed(
        endpoint.api_key_env, listed=settings.MODEL_KEY_VARIABLES
    )
    endpoint.key_set = bool(endpoint.key_allowed and endpoint.api_key_env and os.environ.get(endpoint.api_key_env))
    return EndpointAdminSerializer(endpoint).data


def _endpoint_get(pk: int) -> ModelEndpoint:
    # Endpoints are not project data: every signed-in user may see that one exists.
    endpoint = ModelEndpoint.objects.filter(pk=pk).first()
    if endpoint is None:
        raise NotFound("No such model endpoint.")
    return endpoint


ENDPOINT_RESPONSE = OpenApiResponse(
    EndpointAdminSerializer, description="Site admins get the configuration too; others the fields of Endpoint."
)
STAFF_ERRORS = {**ERRORS, 403: OpenApiResponse(DetailSerializer, description=STAFF_ONLY)}


# --- Endpoints -------------------------------------------------------------------------

class ModelEndpointListApi(ApiView):
    permission_classes = [IsAuthenticated, StaffWrites]
    list_filters = ()

    @extend_schema(
        summary="The configured model endpoints",
        description="Everyone: name, kind, model, is_scripted, enabled. Site admins also see the configuration and "
        "whether the key variable is set. The key itself never appears.",
        responses=EndpointAdminSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(ModelEndpoint.objects.order_by("name", "id"), request, view=self)
        return paginator.get_paginated_response([_endpoint_data(e, request.user) for e in page])

    @extend_schema(
        summary="Add a model endpoint (site admins)",
        request=EndpointWriteSerializer,
        responses={201: EndpointAdminSerializer, **STAFF_ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = self.valid_data(EndpointWriteSerializer)
        endpoint = endpoint_save(user=request.user, data=data)
        return Response(_endpoint_data(endpoint, request.user), status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class ModelEndpointDetailApi(ApiView):
    permission_classes = [IsAuthenticated, StaffWrites]

    @extend_schema(summary="One model endpoint", responses={200: ENDPOINT_RESPONSE, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(_endpoint_data(_endpoint_get(pk), request.user))

    @extend_schema(
        summary="Change a model endpoint (site admins)",
        description="Send only the fields to change.",
        request=EndpointWriteSerializer,
        responses={200: EndpointAdminSerializer, **STAFF_ERRORS},
    )
    def patch(self, request: Request, pk: int) -> Response:
        endpoint = _endpoint_get(pk)
        serializer = EndpointWriteSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        data = {field: getattr(endpoint, field) for field in FIELDS} | serializer.validated_data
        endpoint = endpoint_save(user=request.user, data=data, endpoint=endpoint)
        return Response(_endpoint_data(endpoint, request.user))


def usable_endpoint(pk: int) -> ModelEndpoint:
    """The enabled model endpoint a request body names (the drafting, trials and probe APIs
    take one). An unknown or disabled one is the request's mistake (400), not a missing
    object of the URL (404)."""
    try:
        return selectors.endpoint_get_usable(pk=pk)
    except Http404:
        raise InvalidRequest(
            f"There is no enabled model endpoint {pk}. GET /api/model-endpoints/ lists them; a site admin adds one."
        ) from None
