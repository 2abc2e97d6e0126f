"""The one way Taskwright calls a model.

    result = chat(endpoint=endpoint, messages=[...], purpose="drafting", project_id=...,
                  tools=None, schema=None, temperature=None, max_tokens=None, defer_log=False)

Every call: takes a slot of the endpoint's concurrency cap (shared by all processes),
retries 429 / 5xx / timeouts / malformed answers with jittered exponential backoff
that honours Retry-After, fails fast on auth and quota errors, validates structured
output against the schema (re-asking a bounded number of times), and is recorded as
a ModelCall with tokens, cost, latency and outcome. Never call it inside a database
transaction: a model call can take minutes.

A call to a model server is in the log before its first request goes out (as an error,
"interrupted", until it ends): a process killed while it waits for the answer still leaves
the call it made, and paid for, in the log; when the call ends its row gets its outcome,
tokens and cost. With `defer_log=True` the ModelCall of a successful call that was not
logged yet (a scripted endpoint's) comes back unsaved, as `result.log`, for the caller to
save with its own rows.
"""

import email.utils
import functools
import json
import logging
import os
import random
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

import httpx2
import jsonschema
from django.conf import settings

from llm import egress, providers, scripted
from llm import http as llm_http
from llm.concurrency import endpoint_slot
from llm.errors import ModelError, RetryableError
from llm.models import CallOutcome, EndpointKind, ModelCall, ModelEndpoint

if TYPE_CHECKING:
    import anthropic
    import openai

logger = logging.getLogger(__name__)
SCHEMA_RETRIES = 2
MAX_RETRY_AFTER = 120.0
MAX_RESPONSE_BYTES = 20 * 1024 * 1024


@dataclass
class ChatResult(providers.Reply):
    cost: Decimal = Decimal("0")
    latency_ms: int = 0
    attempts: int = 1
    endpoint_name: str = ""
    scripted: bool = False
    log: ModelCall | None = None  # with defer_log: this call's row of the log, for the caller to insert


def chat(
    *, endpoint: ModelEndpoint, messages: list[dict], purpose: str, project_id: int | None = None,
    tools: list[dict] | None = None, schema: dict | None = None, temperature: float | None = None,
    max_tokens: int | None = None, defer_log: bool = False,
) -> ChatResult:
    started = time.monotonic()
    totals = {"input": 0, "output": 0, "attempts": 0}
    pending = _PendingLog(endpoint, purpose, project_id, totals, started)
    try:
        if not endpoint.enabled:
            raise ModelError(f"The model endpoint {endpoint.name!r} is disabled. An admin can enable it under Models.", kind="config")
        conversation = list(messages)
        for schema_try in range(SCHEMA_RETRIES + 1):
            reply = _one_answer(endpoint, conversation, tools, schema, temperature, max_tokens, totals, pending.before_request)
            if schema is None:
                break
            problem = _schema_problem(reply.structured, schema)
            if problem is None:
                break
            if schema_try == SCHEMA_RETRIES:
                raise ModelError(
                    f"The model's answer did not follow the required structure after {SCHEMA_RETRIES + 1} tries: {problem}",
                    kind="response", attempts=totals["attempts"],
                )
            conversation = [
                *conversation,
                {"role": "assistant", "content": reply.text or json.dumps(reply.structured)},
                {
                    "role": "user",
                    "content": f"That answer does not match the JSON schema: {problem}. Reply again with JSON that matches it exactly.",
                },
            ]
    except ModelError as error:
        error.attempts = max(error.attempts, totals["attempts"])
        pending.end(_log_row(endpoint, purpose, project_id, totals, started, outcome=CallOutcome.ERROR, error=str(error)))
        raise
    cost = endpoint.cost_of(totals["input"], totals["output"])
    log = _log_row(endpoint, purpose, project_id, totals, started, outcome=CallOutcome.OK, cost=cost)
    if pending.row is not None or not defer_log:
        log = pending.end(log)
        defer_log = False
    return ChatResult(
        text=reply.text, tool_calls=reply.tool_calls, structured=reply.structured, finish_reason=reply.finish_reason, raw=reply.raw,
        input_tokens=totals["input"], output_tokens=totals["output"], cost=cost,
        latency_ms=int((time.monotonic() - started) * 1000), attempts=totals["attempts"], endpoint_name=endpoint.name,
        scripted=endpoint.is_scripted, log=log if defer_log else None,
    )


# Formats checked in a reply: only those jsonschema checks with no optional package, so a
# reply is judged the same wherever it runs (jsonschema checks "date-time" only when
# rfc3339-validator happens to be installed). Dates are checked by the renderers, which
# explain a bad one in the expert's words ("has no UTC offset") for the model to repair.
FORMAT_CHECKER = jsonschema.FormatChecker(formats=("email", "ipv4", "ipv6", "date", "regex", "uuid"))


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    # Checking a schema against the meta-schema costs more than validating a reply, so
    # each schema is checked and compiled once per process.
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=FORMAT_CHECKER)


def _schema_problem(value: object, schema: dict) -> str | None:
    error = jsonschema.exceptions.best_match(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the top level"
    return f"at {where}: {error.message[:300]}"


INTERRUPTED = "Interrupted: the process making this call stopped before its answer arrived."
OUTCOME_FIELDS = ("outcome", "input_tokens", "output_tokens", "cost", "latency_ms", "attempts", "error")


class _PendingLog:
    """A call's row of the log, inserted before its first request goes out and brought up to
    date (its attempts) before each further one, then completed by end()."""

    def __init__(self, endpoint, purpose, project_id, totals, started) -> None:
        self.args = (endpoint, purpose, project_id, totals, started)
        self.row: ModelCall | None = None

    def before_request(self) -> None:
        if self.row is None:
            self.row = _log_row(*self.args, outcome=CallOutcome.ERROR, error=INTERRUPTED)
            self.row.save()
        else:
            ModelCall.objects.filter(pk=self.row.pk).update(attempts=self.args[3]["attempts"])

    def end(self, log: ModelCall) -> ModelCall:
        """The call's final row: `log`, saved (in place of the pending one when there is one)."""
        if self.row is not None:
            log.pk, log.created_at = self.row.pk, self.row.created_at
            log.save(update_fields=OUTCOME_FIELDS)  # (what the call's end changes; none of them is a foreign key)
        else:
            log.save()
        return log


def _one_answer(endpoint, messages, tools, schema, temperature, max_tokens, totals, before_request=None) -> providers.Reply:
    """One answer, with our retry policy (the SDKs' own retries are off)."""
    if endpoint.kind == EndpointKind.SCRIPTED:
        totals["attempts"] += 1
        reply = scripted.answer(messages=messages, tools=tools, schema=schema)
        totals["input"] += reply.input_tokens
        totals["output"] += reply.output_tokens
        return reply
    key = _api_key(endpoint)
    base = settings.LLM_BACKOFF_BASE
    for attempt in range(1, endpoint.max_retries + 2):
        totals["attempts"] += 1
        try:
            with endpoint_slot(endpoint_id=endpoint.pk, cap=endpoint.max_concurrency):
                if before_request is not None:
                    before_request()
                reply = _send(endpoint, key, messages, tools, schema, temperature, max_tokens)
            totals["input"] += reply.input_tokens
            totals["output"] += reply.output_tokens
            return reply
        except RetryableError as error:
            if attempt > endpoint.max_retries:
                kind = "server" if error.kind == "rate_limit" else error.kind
                raise ModelError(f"{error} Gave up after {attempt} attempts.", kind=kind, attempts=attempt) from None
            if error.retry_after is not None:
                delay = min(error.retry_after, MAX_RETRY_AFTER) + random.uniform(0, base)
            else:
                delay = min(base * 2 ** (attempt - 1), 30.0) * random.uniform(0.5, 1.5)
            logger.info("model call to %s failed (%s); retry %d in %.2fs", endpoint.name, error, attempt, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")


def _api_key(endpoint: ModelEndpoint) -> str | None:
    if not endpoint.api_key_env:
        return None
    # Checked again here, not only when the endpoint is saved: one saved before the rule (or
    # while the deployment listed the name) must not send the variable. Decided by the name
    # alone, before the environment is read, so the answer is the same whether it is set.
    if not egress.key_variable_allowed(endpoint.api_key_env, listed=settings.MODEL_KEY_VARIABLES):
        raise ModelError(
            f"The endpoint {endpoint.name!r} reads its API key from {endpoint.api_key_env}, which this deployment does not "
            "allow as a model key, so nothing was sent. A site admin can change the endpoint's key variable. "
            + egress.key_variable_rule(listed=settings.MODEL_KEY_VARIABLES),
            kind="config",
        )
    key = os.environ.get(endpoint.api_key_env, "")
    if not key:
        raise ModelError(
            f"The endpoint {endpoint.name!r} reads its API key from the environment variable {endpoint.api_key_env}, "
            "which is not set on this machine. Set it for the web server and the workers, then restart them.",
            kind="config",
        )
    return key


def _retry_after(headers) -> float | None:
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


@functools.cache
def load_sdks():
    """The official SDKs, imported when a process first calls a model server (or a worker
    that takes model calls starts: config.celery): together they hold about 90 MB and take
    about a second to import, which a process that never calls a model (the web, a packs
    worker) need not pay."""
    import anthropic
    import openai

    return openai, anthropic


_clients: dict[tuple, "openai.OpenAI | anthropic.Anthropic"] = {}
_clients_lock = threading.Lock()
MAX_CLIENTS = 64


def _sdk_client(endpoint: ModelEndpoint, key: str | None) -> "openai.OpenAI | anthropic.Anthropic":
    """The SDK client for the endpoint as configured now, one per process, shared by every
    thread (its connection pool is thread-safe). Keyed by everything a client is built from,
    so an endpoint edited (or a deployment that stops allowing private networks) gets a new
    one, and a connection checked under a wider rule is never reused under a narrower one.
    The SDKs' own retries are off: llm.client's policy is the one."""
    anthropic_kind = endpoint.kind == EndpointKind.ANTHROPIC
    allow_private = settings.MODEL_ALLOW_PRIVATE_NETWORKS
    base_url = (endpoint.base_url or ("https://api.anthropic.com" if anthropic_kind else "https://api.openai.com/v1")).rstrip("/")
    if anthropic_kind and base_url.endswith("/v1"):  # the SDK adds /v1/messages
        base_url = base_url[:-3]
    identity = (endpoint.kind, base_url, key, endpoint.connect_timeout, endpoint.read_timeout, allow_private, MAX_RESPONSE_BYTES)
    with _clients_lock:
        client = _clients.get(identity)
        if client is not None:
            return client
        openai, anthropic = load_sdks()
        if len(_clients) >= MAX_CLIENTS:  # endpoints edited many times: start again
            for old in _clients.values():
                old.close()
            _clients.clear()
        http_client = llm_http.http_client(
            connect_timeout=endpoint.connect_timeout, read_timeout=endpoint.read_timeout, allow_private=allow_private,
            max_bytes=MAX_RESPONSE_BYTES, keepalive=max(endpoint.max_concurrency, 8),
        )
        # Every credential is given explicitly (empty when the endpoint has none, and then no
        # Authorization header at all): an SDK given none reads OPENAI_API_KEY,
        # OPENAI_ADMIN_KEY, OPENAI_ORG_ID or ANTHROPIC_API_KEY (and Anthropic's profile
        # files), which would send a key the admin never chose.
        if anthropic_kind:
            client = anthropic.Anthropic(api_key=key or "", base_url=base_url, max_retries=0, http_client=http_client)
        else:
            client = openai.OpenAI(
                api_key=key or "", base_url=base_url, max_retries=0, http_client=http_client, admin_api_key="", organization="", project="",
            )
        _clients[identity] = client
        return client


def request_body(*, kind: str, model: str, messages: list[dict], tools: list[dict] | None, schema: dict | None = None,
                 temperature: float | None = None, max_tokens: int | None = None) -> dict:
    """A call's body in the provider's wire format, as _send posts it (a streamed call adds
    the SDK's stream flag). The trajectory page shows a step's request with it."""
    build = providers.anthropic_request if kind == EndpointKind.ANTHROPIC else providers.openai_request
    return build(tools=tools, schema=schema, model=model, messages=messages, temperature=temperature, max_tokens=max_tokens)


def _send(endpoint, key, messages, tools, schema, temperature, max_tokens) -> providers.Reply:
    anthropic_kind = endpoint.kind == EndpointKind.ANTHROPIC
    body = request_body(kind=endpoint.kind, model=endpoint.model, messages=messages, tools=tools, schema=schema,
                        temperature=temperature, max_tokens=max_tokens)
    client = _sdk_client(endpoint, key)
    openai, anthropic = load_sdks()
    # A local model server needs no key: then no Authorization header at all.
    headers = {} if key else {"Authorization": anthropic.omit if anthropic_kind else openai.omit}
    try:
        if endpoint.stream:
            data = _streamed(client, anthropic_kind, body, headers)
            # (a streamed answer has no one body: the events put together, in the unstreamed answer's shape)
            raw = _redacted(json.dumps(data).encode(), key).decode()
        else:
            # The body is already in the provider's wire format (llm.providers), so it goes
            # through the SDK's documented way to post a request as it is, and the answer comes
            # back raw for llm.providers to read: the typed `create()` re-walks every message and
            # tool schema against its TypedDicts (5 of its 7 ms of CPU per agent call, measured
            # in docs/performance.md) and parses the answer into models nothing here reads.
            path = "/v1/messages" if anthropic_kind else "/chat/completions"
            content = _encoded(body, endpoint.kind, tools if schema is None else None)
            response = client.post(path, content=content, cast_to=httpx2.Response, options={"headers": headers})
            # Kept as text for the caller (a rollout step shows it): decoded once, as json.loads would decode the bytes itself.
            raw = _redacted(response.content, key).decode("utf-8", "replace")
            try:
                data = json.loads(raw)
            except ValueError:
                raise RetryableError("The endpoint's answer is not valid JSON.", kind="response") from None
    except (openai.APIStatusError, anthropic.APIStatusError) as error:
        _raise_for_status(endpoint, error.response.status_code, error.response.headers, _redacted(error.response.content, key))
        raise AssertionError("unreachable") from None
    except (openai.APIConnectionError, anthropic.APIConnectionError, httpx2.HTTPError, egress.BlockedAddress, llm_http.AnswerTooLarge,
            llm_http.DeadlinePassed) as error:
        # (the SDKs wrap what fails while a request is sent; a raw answer's body is read after)
        raise _connection_error(endpoint, client, error) from None
    parse = providers.anthropic_reply if anthropic_kind else providers.openai_reply
    reply = parse(data, structured=schema is not None)
    reply.raw = raw
    return reply


# The encoding of each list of tools seen, with the list itself (so that its id stays its own
# while it is kept). A rollout sends the same 23 tool definitions, 16 kB of JSON, with every
# call: workspace.tools.tool_specs gives one list per process, encoded here once.
_encoded_tools: dict[tuple[str, int], tuple[list[dict], bytes]] = {}
ENCODED_TOOLS_KEPT = 32


def _json(value: object) -> bytes:
    """As the SDKs encode a body (compact, UTF-8, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _encoded(body: dict, kind: str, tools: list[dict] | None) -> bytes:
    """The request body as JSON; its "tools" (the `kind` provider's wire form of `tools`,
    which nothing else adds to when no schema is asked for) from the kept encoding."""
    if not tools or "tools" not in body:
        return _json(body)
    key = (kind, id(tools))
    kept = _encoded_tools.get(key)
    if kept is None or kept[0] is not tools:
        if len(_encoded_tools) >= ENCODED_TOOLS_KEPT:
            _encoded_tools.clear()
        kept = _encoded_tools[key] = (tools, _json(body["tools"]))
    rest = _json({name: value for name, value in body.items() if name != "tools"})
    return rest[:-1] + b',"tools":' + kept[1] + b"}"


def _redacted(raw: bytes, key: str | None) -> bytes:
    """A provider or proxy that echoes the key back must not carry it into errors, logs or pages."""
    return raw.replace(key.encode(), b"[redacted]") if key else raw


def _streamed(client, anthropic_kind: bool, body: dict, headers: dict) -> dict:
    """The whole answer of a streamed call, in the shape of an unstreamed one (the SDKs' own
    accumulators put the events together)."""
    if anthropic_kind:
        with client.messages.stream(**body, extra_headers=headers) as stream:
            return stream.get_final_message().model_dump(mode="json")
    from openai.lib.streaming.chat import ChatCompletionStreamState

    state = ChatCompletionStreamState()
    for chunk in client.chat.completions.create(**body, stream=True, stream_options={"include_usage": True}, extra_headers=headers):
        state.handle_chunk(chunk)
    return state.get_final_completion().model_dump(mode="json")


def _connection_error(endpoint: ModelEndpoint, client, error: Exception) -> Exception:
    """Our error for an exchange that ended before a whole answer arrived."""
    if llm_http.cause(error, egress.BlockedAddress):  # not worth a retry: the same name would be refused again
        return ModelError(
            f"The endpoint {endpoint.name!r} was not called: its host does not resolve to a public address, and this "
            "deployment does not allow model calls to private networks (MODEL_ALLOW_PRIVATE_NETWORKS). Nothing was sent.",
            kind="config",
        )
    if llm_http.cause(error, llm_http.AnswerTooLarge):
        return RetryableError("The endpoint's answer is too large.", kind="response")
    if llm_http.cause(error, llm_http.DeadlinePassed, httpx2.WriteTimeout):
        return RetryableError(f"The endpoint did not finish answering within {endpoint.read_timeout:g} s.", kind="timeout")
    if llm_http.cause(error, httpx2.TimeoutException):
        return RetryableError(f"The endpoint did not answer within {endpoint.read_timeout:g} s.", kind="timeout")
    if llm_http.cause(error, httpx2.RemoteProtocolError, httpx2.DecodingError):
        detail = "malformed or incomplete HTTP"
    else:
        found = llm_http.cause(error, OSError)
        detail = type(found).__name__ if found else "connection failed"
    where = (endpoint.base_url or str(client.base_url)).rstrip("/")
    return RetryableError(f"Could not reach the endpoint at {where} ({detail}).", kind="server")


MAX_REASON = 120


def _error_reason(headers, raw: bytes) -> str:
    """The short reason a model API gives in a well-formed JSON error: {"error": {"message":
    ...}} (OpenAI, Anthropic, most compatible servers), {"error": "..."} (Ollama, llama.cpp)
    or {"object": "error", "message": ...} (older vLLM). Anything else (an HTML error page, a
    proxy's or some internal service's answer) gives no reason: its text could be anything,
    and it is shown to authors, so it is never repeated. Control characters are dropped,
    whitespace collapsed, and the reason cut at MAX_REASON characters."""
    if "json" not in headers.get("content-type", "").lower():
        return ""
    try:
        data = json.loads(raw)
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
    elif error is not None:
        message = error
    else:
        message = data.get("message") if "error" in (data.get("object"), data.get("type")) else None
    if not isinstance(message, str):
        return ""
    reason = " ".join("".join(c if c.isprintable() else " " for c in message[:1000]).split())  # (bidi and zero-width marks too)
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1].rstrip() + "…"


def _raise_for_status(endpoint: ModelEndpoint, status: int, headers, raw: bytes) -> None:
    reason = _error_reason(headers, raw)
    # What a user sees: the status and, from a model API's own error, its short reason; for
    # any other answer only that it was not a model API's.
    detail = f"HTTP {status}: {reason}" if reason else f"HTTP {status}, not a model API's answer"
    if 300 <= status < 400:
        raise ModelError(
            f"The endpoint answered with a redirect (HTTP {status}). Taskwright never follows redirects, so the API key "
            "only ever goes to the configured host: set the base URL to the final address.",
            kind="config",
        )
    if status in (401, 403) and not endpoint.api_key_env:
        raise ModelError(
            f"The endpoint {endpoint.name!r} refused the request ({detail}): it wants an API key, and none is configured. "
            "A site admin can give the endpoint a key variable on the Models page.",
            kind="auth",
        )
    if status in (401, 403):
        raise ModelError(
            f"The endpoint {endpoint.name!r} refused the API key from {endpoint.api_key_env} "
            f"({detail}). Check that the key is valid for this endpoint.",
            kind="auth",
        )
    if status == 402 or (status == 429 and "quota" in reason.lower()):
        raise ModelError(f"The provider says the account is out of credit or quota ({detail}).", kind="quota")
    if status == 429:
        raise RetryableError(f"The endpoint is rate-limiting us ({detail}).", kind="rate_limit", retry_after=_retry_after(headers))
    if status in (408, 409) or status >= 500:
        raise RetryableError(f"The endpoint failed ({detail}).", kind="server", retry_after=_retry_after(headers))
    raise ModelError(f"The endpoint rejected the request ({detail}).", kind="response")


def _log_row(endpoint, purpose, project_id, totals, started, *, outcome, cost=Decimal("0"), error="") -> ModelCall:
    return ModelCall(
        endpoint=endpoint if endpoint.pk else None,
        endpoint_name=endpoint.name,
        project_id=project_id,
        purpose=purpose,
        outcome=outcome,
        input_tokens=totals["input"],
        output_tokens=totals["output"],
        cost=cost,
        latency_ms=int((time.monotonic() - started) * 1000),
        attempts=max(totals["attempts"], 1),
        error=error[:2000],
    )
