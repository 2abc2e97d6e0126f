"""What the authoring API modules share: error documentation, the model endpoint named in
a request body, and content negotiation for file downloads."""

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse
from rest_framework.negotiation import BaseContentNegotiation

from core.apis import ERRORS, DetailSerializer, InvalidRequest
from llm.models import ModelEndpoint
from llm.selectors import endpoint_get_usable

STALE = OpenApiResponse(DetailSerializer, description="Based on an old revision: someone saved since. Carries current_revision and the changes.")
EDIT_ERRORS = {**ERRORS, 409: STALE}


def usable_endpoint(pk: int) -> ModelEndpoint:
    """The enabled model endpoint a request names. An unknown or disabled one is the
    request's mistake (400), not a missing object of the URL (404)."""
    try:
        return endpoint_get_usable(pk=pk)
    except Http404:
        raise InvalidRequest(
            f"There is no enabled model endpoint {pk}. GET /api/model-endpoints/ lists them; a site admin adds one."
        ) from None


class FirstRendererNegotiation(BaseContentNegotiation):
    """A download answers its file whatever the client accepts; its errors are JSON."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type
