"""API plumbing every app's apis.py shares: error mapping, strict parsing of ids and
query parameters, pagination, the base view and small serializer helpers."""

from collections.abc import Mapping

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig, TooManyFilesSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.utils.decorators import method_decorator
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import exceptions, parsers, serializers, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from core.exceptions import ApplicationError, PermissionRefused, StaleEditError
from core.pagination import ApiPagination

MAX_ID = 2**63 - 1  # PostgreSQL bigint: a larger id would be a database error, not a 404


# --- Errors ----------------------------------------------------------------------------

class InvalidRequest(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "The request is invalid."
    default_code = "invalid_request"


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The resource is not in a state that allows this."
    default_code = "conflict"


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


class DetailSerializer(serializers.Serializer):
    """The shape of every error answer (a field error answers {field: [message]})."""

    detail = serializers.CharField()


# What an operation that checks its input and the caller's role may answer (403: a
# PermissionRefused). A read every member of the project may make: READ_ERRORS.
ERRORS = {
    400: OpenApiResponse(DetailSerializer, description="Invalid input, or a rule of the domain said no."),
    403: OpenApiResponse(DetailSerializer, description="Your role in the project may not do this."),
    404: OpenApiResponse(DetailSerializer, description="No such object in your projects."),
}
READ_ERRORS = {400: ERRORS[400], 404: ERRORS[404]}


# --- Parsing ---------------------------------------------------------------------------

def _check_text(data: object) -> None:
    """Refuse text PostgreSQL cannot store (NUL, lone surrogates) wherever it sits in
    the document, so it is a 400 here and not a database error later. Iterative:
    a deeply nested document must not exhaust the stack."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            if "\x00" in value:
                raise exceptions.ParseError("Text may not contain NUL (\\u0000) characters.")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise exceptions.ParseError("Text contains invalid Unicode (an unpaired surrogate).") from None


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, plus: nesting deep enough to overflow the stack is a 400 (DRF
    lets RecursionError through as a 500), and so is text PostgreSQL cannot store.
    (The body size limit is Django's: DRF reads JSON through request.body.)"""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - the document is nested too deeply.") from None
        _check_text(data)
        return data


# --- Base view -------------------------------------------------------------------------

def parse_id(value: object, *, name: str = "id") -> int:
    text = str(value)
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_ID:
        raise InvalidRequest(f"{name} must be a positive whole number, not {text[:40]!r}.")
    return int(text)


ID_PARAMETER = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="A positive whole number.")
PROJECT_PARAMETER = OpenApiParameter("project", OpenApiTypes.INT, description="Only objects of this project.")


def status_parameter(choices: list[str]) -> OpenApiParameter:
    return OpenApiParameter("status", OpenApiTypes.STR, enum=choices, description="Only objects with this status.")


# The base of every Taskwright API view. (A comment, not a docstring: the schema would
# show a docstring as the description of every endpoint.)
# - Query parameters are allow-listed: every request accepts `format`; GET on a list
#   view also accepts `limit`, `offset`, `cursor` (unless `list_cursor` is False: the list
#   pages by offset only, see core/pagination.py) and the view's `list_filters`. Anything
#   else is a 400, never silently ignored (a typo in a filter must not return everything).
# - Path ids are parsed once, here: a non-integer id is a 400, not an ORM error.
# - Exempt from LoginRequiredMiddleware: DRF authenticates (token or session) and answers
#   401/403 JSON; the middleware's redirect to the sign-in page means nothing to a client.
@method_decorator(login_not_required, name="dispatch")
class ApiView(APIView):

    parser_classes = [JSONParser]
    pagination_class = ApiPagination
    list_filters: tuple[str, ...] | None = None  # None: GET is not a list
    list_cursor = True  # False: the list's order cannot be walked by cursor (offset only)

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)  # authentication first: 401 before 400
        self._check_query_params(request)
        # dispatch() passes this same dict to the handler, so the handler gets ints.
        for name, value in self.kwargs.items():
            self.kwargs[name] = parse_id(value)

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, RequestDataTooBig):  # else Django answers a bare HTML 400
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            exc = PayloadTooLarge(f"The request body is too large ({limit:,} bytes at most).")
        elif isinstance(exc, TooManyFilesSent):  # likewise
            exc = InvalidRequest(f"Send at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files in one request.")
        return super().handle_exception(exc)

    def _check_query_params(self, request: Request) -> None:
        allowed = {"format"}
        if request.method == "GET" and self.list_filters is not None:
            allowed |= {"limit", "offset", *self.list_filters}
            if self.list_cursor:
                allowed.add("cursor")
        unknown = sorted(set(request.query_params) - allowed)
        if unknown:
            raise InvalidRequest(
                f"Unknown query parameter(s): {', '.join(unknown)[:200]}. "
                f"This endpoint accepts: {', '.join(sorted(allowed))}."
            )
        for name in request.query_params:
            if len(request.query_params.getlist(name)) > 1:
                raise InvalidRequest(f"Give the query parameter {name} once.")
        if "cursor" in request.query_params and "offset" in request.query_params:
            raise InvalidRequest("Give either cursor or offset, not both.")
        for name, minimum in (("limit", 1), ("offset", 0)):
            value = request.query_params.get(name)
            if value is not None and (not value.isascii() or not value.isdigit() or int(value) < minimum or len(value) > 18):
                raise InvalidRequest(f"{name} must be a whole number of at least {minimum}.")

    def int_param(self, name: str) -> int | None:
        value = self.request.query_params.get(name)
        return None if value in (None, "") else parse_id(value, name=name)

    def choice_param(self, name: str, choices: list[str]) -> str | None:
        value = self.request.query_params.get(name)
        if value in (None, ""):
            return None
        if value not in choices:
            raise InvalidRequest(f"Unknown {name} {value[:40]!r}; choose one of {', '.join(choices)}.")
        return value

    def valid_data(self, serializer_class: type[serializers.Serializer]) -> dict:
        serializer = serializer_class(data=self.request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def paginated(self, queryset: QuerySet, serializer_class: type[serializers.Serializer]) -> Response:
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(queryset, self.request, view=self)
        return paginator.get_paginated_response(serializer_class(page, many=True, context={"request": self.request}).data)


def text_field(**kwargs) -> serializers.CharField:
    """User text is kept exactly as typed; lengths are the services' business."""
    return serializers.CharField(trim_whitespace=False, allow_blank=True, **kwargs)


def id_field(**kwargs) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=MAX_ID, **kwargs)


def username_field(user_attribute: str) -> serializers.CharField:
    """Who did it, by username: never more of the user than that."""
    return serializers.CharField(source=f"{user_attribute}.username", read_only=True, allow_null=True)


def revision_field() -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=1, max_value=2**31 - 1,
        help_text="The revision your edit is based on. If someone saved since, the answer is 409 with their changes.",
    )


class RevisionedSerializer(serializers.Serializer):
    """An edit's body: `revision` is always required, the fields to change are optional. A
    field the edit does not change (a misspelt one, `status`, another object's id) is refused
    by name: DRF would drop it, answer 200 and leave the client believing it was changed."""

    revision = revision_field()

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            writable = [name for name, field in self.fields.items() if not field.read_only]
            unknown = sorted(str(name) for name in data if name not in writable)
            if unknown:
                can = ", ".join(name for name in writable if name != "revision")
                raise serializers.ValidationError(
                    {name: [f"Not something this edit changes (it changes: {can})."] for name in unknown}
                )
        return super().to_internal_value(data)


class RevisionedSerializerSchema(OpenApiSerializerExtension):
    # drf-spectacular documents every PATCH body as all-optional; ours requires revision.
    target_class = RevisionedSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if "revision" not in schema.setdefault("required", []):
            schema["required"].insert(0, "revision")
        return schema


def exception_handler(exc, context):
    """Map domain errors to clear 400/403/409 answers; everything else as DRF does."""
    if isinstance(exc, StaleEditError):
        # (each change's "html" is the page's marked-up diff; the API gives the text and a unified diff)
        changes = {name: {k: v for k, v in change.items() if k != "html"} for name, change in exc.extra.get("changes", {}).items()}
        kept = {k: v for k, v in exc.extra.items() if k != "model"}  # "model" tells a page which form to refresh
        return Response({"detail": exc.message, **kept, "changes": changes}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, PermissionRefused):
        return Response({"detail": exc.message, **exc.extra}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, ApplicationError):
        return Response({"detail": exc.message, **exc.extra}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        exc = exceptions.ValidationError(detail)
    return drf_exception_handler(exc, context)


class FirstRendererNegotiation(BaseContentNegotiation):
    """A download answers its file whatever the client accepts; its errors are JSON."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type
