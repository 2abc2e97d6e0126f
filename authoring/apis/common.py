"""What the authoring API modules share: error documentation."""

from drf_spectacular.utils import OpenApiResponse

from core.apis import ERRORS, DetailSerializer

STALE = OpenApiResponse(
    DetailSerializer, description="Based on an old revision: someone saved since. Carries current_revision and the changes."
)
EDIT_ERRORS = {**ERRORS, 409: STALE}
