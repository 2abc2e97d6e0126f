from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    """The API token sent as `Authorization: Bearer <token>`, the form MCP clients and most
    HTTP tools use; `Token <token>` (DRF's own) works too."""

    keyword = "Bearer"


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """The schema's name for it (drf-spectacular would call both "tokenAuth")."""

    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema) -> dict:
        return {"type": "http", "scheme": "bearer", "description": "The API token: `Authorization: Bearer <token>`."}
