"""The OpenAPI schema as the API answers (schemathesis holds us to it:
tests/api/test_schema_fuzz.py).

`document_common_errors` (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]) adds what every
operation may answer whatever its view says, where the view did not document it itself:

- 400 on every operation: core.apis.ApiView refuses an unknown or repeated query parameter
  and a malformed id, limit or offset on all of them. A 400 body is `{"detail": "..."}` or,
  for a field that failed validation, `{"field": ["message", ...]}`: the `Invalid` schema;
- 401 on every operation that needs a sign-in: no token, or a wrong one (TokenAuthentication
  comes first, so DRF answers 401 with `WWW-Authenticate: Token`, not 403);
- 403 on every such write: a role that may not, or a session-authenticated write without
  its CSRF token (a read that can refuse, such as a world's export, documents it itself);
- 404 on every operation with an object id in its path: none of yours has it;
- 415 on every operation that takes a body: a body in a media type it does not read;
- 429 on every operation: the API throttles (core.throttles), with `Retry-After`.

`AutoSchema` (DEFAULT_SCHEMA_CLASS) is drf-spectacular's, but: a list answer is documented
as paginated only on the GETs an ApiView declares lists (`list_filters`), the others answer
a plain array; and the body of a DELETE that names one with `extend_schema(request=...)` is
documented (a criterion's removal carries the rubric's `revision` it is based on), where
drf-spectacular documents bodies on PUT, PATCH and POST only.
"""

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema


class AutoSchema(SpectacularAutoSchema):
    def _get_paginator(self):
        # An ApiView pages only the GETs it declares lists (`list_filters`, which also admits
        # `limit` and `offset`); drf-spectacular would call every many=True answer paginated.
        if hasattr(self.view, "list_filters") and (self.method != "GET" or self.view.list_filters is None):
            return None
        return super()._get_paginator()

    def _get_request_body(self, direction="request"):
        if self.method != "DELETE" or self.get_request_serializer() is None:
            return super()._get_request_body(direction)
        self.method = "PUT"  # a full body, every required field required (not PATCH's all-optional)
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"


DETAIL_REF = {"$ref": "#/components/schemas/Detail"}
INVALID_REF = {"$ref": "#/components/schemas/Invalid"}
INVALID = {
    "type": "object",
    "description": "Why the request was refused: `detail`, or per field that failed validation, its messages.",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": True,
    "minProperties": 1,
}

COMMON_ERRORS = {
    "400": "Invalid input (a field, a query parameter, an id), or a rule of the domain said no.",
    "401": "Not signed in: no token, or the token is wrong or revoked.",
    "403": "Signed in, but not allowed: your role in the project may not do this (or a session request without its CSRF token).",
}
THROTTLED = "Too many requests: wait the number of seconds in `Retry-After`."
NOT_FOUND = "No such object in your projects."
UNSUPPORTED = "The body is not in a media type this operation reads (see its request body), or it could not be read as one."
METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")
SAFE_METHODS = ("get", "head", "options", "trace")


def _error(description: str, *, retry_after: bool = False, schema: dict = DETAIL_REF) -> dict:
    response = {"description": description, "content": {"application/json": {"schema": schema}}}
    if retry_after:
        response["headers"] = {
            "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait before trying again."}
        }
    return response


def document_common_errors(result: dict, generator, request, public) -> dict:
    result.setdefault("components", {}).setdefault("schemas", {})["Invalid"] = INVALID
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in METHODS:
                continue
            responses = operation.setdefault("responses", {})
            responses.setdefault("400", _error(COMMON_ERRORS["400"], schema=INVALID_REF))
            # A view's 400 documented as the plain {"detail"} shape may also answer field errors.
            invalid = responses["400"].get("content", {}).get("application/json", {})
            if invalid.get("schema") == DETAIL_REF:
                invalid["schema"] = INVALID_REF
            # `security: [{}]` or none at all: the operation is open (the token endpoint).
            if any(requirement for requirement in operation.get("security", [])):
                responses.setdefault("401", _error(COMMON_ERRORS["401"]))
                if method not in SAFE_METHODS:  # a read that may refuse documents its 403 itself
                    responses.setdefault("403", _error(COMMON_ERRORS["403"]))
            if any(parameter.get("in") == "path" for parameter in operation.get("parameters", [])):
                responses.setdefault("404", _error(NOT_FOUND))
            if "requestBody" in operation:
                responses.setdefault("415", _error(UNSUPPORTED))
            responses.setdefault("429", _error(THROTTLED, retry_after=True))
    return result
