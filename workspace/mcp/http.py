"""MCP over streamable HTTP, as Django views:

    POST /mcp/worlds/<id>/     the world, read-only
    POST /mcp/overlays/<id>/   the overlay over its world: write tools for authors and admins

Every request carries an API token (`Authorization: Bearer <token>` or `Token <token>`,
the token of POST /api/auth/token/): none or an unknown one is a 401. The world or
overlay is fetched with the pages' selectors, so one the token's user may not see is a
404, as on the pages.

Why a Django view and not an ASGI app mounted beside Django: the SDK's transport runs
in *stateless, JSON-response* mode (each POST is one self-contained JSON-RPC exchange,
no session kept in process memory, no SSE stream left open), so one request is one
bounded exchange that a plain async view can drive. The view then serves under
`runserver` (WSGI, what `make run` starts), under any ASGI server, and on every web
node alike, with Django's own host checks, middleware and connection handling. The
exchange is handed to the SDK's StreamableHTTPSessionManager unchanged (a fresh one per
request, scoped to that request's world or overlay), so the protocol is the SDK's:
the 2025 initialize handshake and the 2026 per-request envelope both work.
"""

import logging
from dataclasses import dataclass

import anyio
from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from accounts.selectors import membership_for
from authoring.models import World
from authoring.selectors import world_get_for_user
from core.apis import MAX_ID
from workspace.models import Overlay
from workspace.selectors import overlay_get_for_user

# The SDK logs a session's start and end at INFO; with one stateless exchange per request
# that is two lines of noise per call.
for _name in ("mcp.server.streamable_http_manager", "mcp.server.streamable_http"):
    logging.getLogger(_name).setLevel(logging.WARNING)

INVALID_REQUEST, INTERNAL_ERROR = -32600, -32603  # JSON-RPC error codes
REQUEST_TIMEOUT_SECONDS = 60  # one exchange: a tool call reads or writes one world's rows
TOKEN_SCHEMES = ("bearer", "token")
HOP_HEADERS = {"content-length", "transfer-encoding", "connection"}


@dataclass(frozen=True)
class Target:
    world: World
    overlay: Overlay | None
    allow_writes: bool


def _rpc_error(status: int, message: str, *, code: int = INVALID_REQUEST, headers: dict | None = None) -> JsonResponse:
    """A JSON-RPC error body, so an MCP client shows the message rather than a bare status."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JsonResponse(body, status=status, headers=headers)


def _token_key(request: HttpRequest) -> str | None:
    scheme, _, key = request.headers.get("Authorization", "").strip().partition(" ")
    key = key.strip()
    if scheme.lower() not in TOKEN_SCHEMES or not key or " " in key:
        return None
    return key


def _resolve(*, key: str, world_id: int | None, overlay_id: int | None) -> Target | None:
    """The world or overlay the token's user may see (None: no such token; Http404:
    nothing of that id the user may see)."""
    try:
        user, _ = TokenAuthentication().authenticate_credentials(key)  # unknown token or inactive user
    except AuthenticationFailed:
        return None
    if max(world_id or 0, overlay_id or 0) > MAX_ID:
        raise Http404
    if overlay_id is not None:
        overlay = overlay_get_for_user(user=user, pk=overlay_id)
        world = overlay.world
    else:
        overlay, world = None, world_get_for_user(user=user, pk=world_id)
    membership = membership_for(user=user, project_id=world.project_id)
    return Target(world=world, overlay=overlay, allow_writes=overlay is not None and bool(membership and membership.can_author))


def _scope(request: HttpRequest) -> dict:
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1", "replace")) for name, value in request.headers.items()]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1", "replace"),
        "root_path": "",
        "headers": headers,
        "client": (request.META.get("REMOTE_ADDR") or "", 0),
        "server": (request.get_host(), 0),
    }


async def _exchange(request: HttpRequest, target: Target, body: bytes) -> HttpResponse:
    """One JSON-RPC exchange through the SDK's stateless streamable HTTP transport."""
    # Imported on the first MCP request, not with the URLconf (see workspace/mcp/__init__.py).
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from workspace.mcp.server import build_server

    server = build_server(world=target.world, overlay=target.overlay, allow_writes=target.allow_writes)
    host = request.get_host()  # already checked against ALLOWED_HOSTS
    manager = StreamableHTTPSessionManager(
        app=server,
        stateless=True,
        json_response=True,
        # Browsers send Origin: only a page of this site may call (DNS-rebinding rule of the spec).
        security_settings=TransportSecuritySettings(allowed_hosts=[host], allowed_origins=[f"{request.scheme}://{host}"]),
    )
    response: dict = {"status": None, "headers": [], "body": []}
    answered = anyio.Event()
    body_sent = False

    async def receive() -> dict:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # the client stays connected until the answer is complete
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            response["status"], response["headers"] = message["status"], message.get("headers", [])
        elif message["type"] == "http.response.body":
            response["body"].append(message.get("body", b""))
            if not message.get("more_body"):
                answered.set()

    try:
        with anyio.fail_after(REQUEST_TIMEOUT_SECONDS):
            async with manager.run():
                await manager.handle_request(_scope(request), receive, send)
    except TimeoutError:
        return _rpc_error(504, f"The request took longer than {REQUEST_TIMEOUT_SECONDS} s and was abandoned.", code=INTERNAL_ERROR)
    if response["status"] is None:
        return _rpc_error(500, "The MCP server gave no answer to this request.", code=INTERNAL_ERROR)
    result = HttpResponse(b"".join(response["body"]), status=response["status"])
    for name, value in response["headers"]:
        if name.decode("latin-1").lower() not in HOP_HEADERS:
            result[name.decode("latin-1")] = value.decode("latin-1")
    result["Cache-Control"] = "no-store"
    return result


async def _endpoint(request: HttpRequest, *, world_id: int | None = None, overlay_id: int | None = None) -> HttpResponse:
    key = _token_key(request)
    if key is None:
        return _unauthorized()
    try:
        target = await sync_to_async(_resolve, thread_sensitive=True)(key=key, world_id=world_id, overlay_id=overlay_id)
    except Http404:
        return _rpc_error(404, f"No {'overlay' if overlay_id is not None else 'world'} with that id is visible to this token.")
    if target is None:
        return _unauthorized()
    if request.method != "POST":
        # Stateless, JSON responses: there is no server-to-client stream to GET and no session to DELETE.
        return _rpc_error(405, "Send MCP messages as POST requests.", headers={"Allow": "POST"})
    try:
        body = request.body
    except RequestDataTooBig:
        return _rpc_error(413, "The request body is too large.")
    return await _exchange(request, target, body)


def _unauthorized() -> JsonResponse:
    return _rpc_error(401, "Send an API token: Authorization: Bearer <token> "
                           "(from the API token page, /account/api-token/, or POST /api/auth/token/).",
                      headers={"WWW-Authenticate": 'Bearer realm="taskwright"'})


# Token-authenticated, never by session cookie: no CSRF, and no sign-in redirect (a
# client without a token gets the 401 above).
@login_not_required
@csrf_exempt
async def world_endpoint(request: HttpRequest, world_id: str) -> HttpResponse:
    return await _endpoint(request, world_id=int(world_id))


@login_not_required
@csrf_exempt
async def overlay_endpoint(request: HttpRequest, overlay_id: str) -> HttpResponse:
    return await _endpoint(request, overlay_id=int(overlay_id))
