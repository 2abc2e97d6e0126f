"""The one way Taskwright calls a model.

    result = chat(endpoint=endpoint, messages=[...], purpose="drafting", project_id=...,
                  tools=None, schema=None, temperature=None, max_tokens=None, defer_log=False)

Every call: takes a slot of the endpoint's concurrency cap (shared by all processes),
retries 429 / 5xx / timeouts / malformed answers with jittered exponential backoff
that honours Retry-After, fails fast on auth and quota errors, validates structured
output against the schema (re-asking a bounded number of times), and is recorded as
a ModelCall with tokens, cost, latency and outcome. Never call it inside a database
transaction: a model call can take minutes.

With `defer_log=True` the ModelCall of a successful call comes back unsaved, as
`result.log`, for the caller to insert with its own rows in one round trip
(core.db.insert_rows; the agent loop does, once per step). A failed call is logged at once.
"""

import email.utils
import functools
import json
import logging
import os
import random
import time
from dataclasses import dataclass
from decimal import Decimal

import jsonschema
from django.conf import settings

from core.db import insert_row
from llm import egress, providers, scripted, transport
from llm.concurrency import endpoint_slot
from llm.errors import ModelError, RetryableError
from llm.models import CallOutcome, EndpointKind, ModelCall, ModelEndpoint

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
    try:
        if not endpoint.enabled:
            raise ModelError(f"The model endpoint {endpoint.name!r} is disabled. An admin can enable it under Models.", kind="config")
        conversation = list(messages)
        for schema_try in range(SCHEMA_RETRIES + 1):
            reply = _one_answer(endpoint, conversation, tools, schema, temperature, max_tokens, totals)
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
                {"role": "user", "content": f"That answer does not match the JSON schema: {problem}. Reply again with JSON that matches it exactly."},
            ]
    except ModelError as error:
        error.attempts = max(error.attempts, totals["attempts"])
        insert_row(_log_row(endpoint, purpose, project_id, totals, started, outcome=CallOutcome.ERROR, error=str(error)))
        raise
    cost = endpoint.cost_of(totals["input"], totals["output"])
    log = _log_row(endpoint, purpose, project_id, totals, started, outcome=CallOutcome.OK, cost=cost)
    if not defer_log:
        insert_row(log)
    return ChatResult(
        text=reply.text, tool_calls=reply.tool_calls, structured=reply.structured, finish_reason=reply.finish_reason,
        input_tokens=totals["input"], output_tokens=totals["output"], cost=cost,
        latency_ms=int((time.monotonic() - started) * 1000), attempts=totals["attempts"], endpoint_name=endpoint.name,
        scripted=endpoint.is_scripted, log=log if defer_log else None,
    )


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    # Checking a schema against the meta-schema costs more than validating a reply, so
    # each schema is checked and compiled once per process.
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _schema_problem(value: object, schema: dict) -> str | None:
    error = jsonschema.exceptions.best_match(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the top level"
    return f"at {where}: {error.message[:300]}"


def _one_answer(endpoint, messages, tools, schema, temperature, max_tokens, totals) -> providers.Reply:
    """One answer, with the transport-level retries."""
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
            lease = endpoint.connect_timeout + endpoint.read_timeout + 30
            with endpoint_slot(endpoint_id=endpoint.pk, cap=endpoint.max_concurrency, lease_seconds=lease):
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


def _retry_after(response: transport.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _send(endpoint, key, messages, tools, schema, temperature, max_tokens) -> providers.Reply:
    anthropic = endpoint.kind == EndpointKind.ANTHROPIC
    build = providers.anthropic_request if anthropic else providers.openai_request
    path, payload = _request(build, anthropic, tools=tools, schema=schema, model=endpoint.model, messages=messages, temperature=temperature, max_tokens=max_tokens)
    base_url = (endpoint.base_url or ("https://api.anthropic.com" if anthropic else "")).rstrip("/")
    if anthropic and base_url.endswith("/v1"):
        base_url = base_url[:-3]
    headers = {"content-type": "application/json"}
    if anthropic:
        headers["anthropic-version"] = "2023-06-01"
        if key:
            headers["x-api-key"] = key
    elif key:
        headers["authorization"] = f"Bearer {key}"
    try:
        response = transport.post(
            base_url + path, payload, headers,
            connect_timeout=endpoint.connect_timeout, read_timeout=endpoint.read_timeout, max_bytes=MAX_RESPONSE_BYTES,
            allow_private=settings.MODEL_ALLOW_PRIVATE_NETWORKS,
        )
    except transport.TransportError as error:
        if error.kind == "blocked":  # not worth a retry: the same name would be refused again
            raise ModelError(
                f"The endpoint {endpoint.name!r} was not called: its host does not resolve to a public address, and this "
                "deployment does not allow model calls to private networks (MODEL_ALLOW_PRIVATE_NETWORKS). Nothing was sent.",
                kind="config",
            ) from None
        if error.kind == "too_large":
            raise RetryableError("The endpoint's answer is too large.", kind="response") from None
        if error.kind == "deadline":
            raise RetryableError(f"The endpoint did not finish answering within {endpoint.read_timeout:g} s.", kind="timeout") from None
        if error.kind == "timeout":
            raise RetryableError(f"The endpoint did not answer within {endpoint.read_timeout:g} s.", kind="timeout") from None
        raise RetryableError(f"Could not reach the endpoint at {base_url} ({error.detail or error.kind}).", kind="server") from None
    raw = response.body
    if key:  # a provider or proxy that echoes the key back must not carry it into errors, logs or pages
        raw = raw.replace(key.encode(), b"[redacted]")
    _raise_for_status(endpoint, response, raw)
    try:
        data = json.loads(raw)
    except ValueError:
        raise RetryableError("The endpoint's answer is not valid JSON.", kind="response") from None
    parse = providers.anthropic_reply if anthropic else providers.openai_reply
    return parse(data, structured=schema is not None)


_encoded_tools: dict[tuple[int, bool], tuple[list[dict], bytes]] = {}


def _request(build, anthropic: bool, *, tools: list[dict] | None, schema: dict | None, **fields) -> tuple[str, bytes]:
    """The request's path and JSON body. The tool definitions are often most of the body
    (the world's 23 tools: 16 kB of JSON schemas, 0.3 ms to encode), and an agent sends the
    same list with each of its calls, so a list is put in the provider's format and encoded
    once, and spliced into the rest of each body (a body built without tools is the same
    but for its "tools"; with a schema the Anthropic body adds a tool of its own, so that
    body is built whole). A list passed to chat() is taken as final."""
    if not tools or schema is not None:
        path, body = build(tools=tools, schema=schema, **fields)
        return path, json.dumps(body).encode()
    key = (id(tools), anthropic)  # the list, in that provider's wire format
    entry = _encoded_tools.get(key)
    if entry is None or entry[0] is not tools:  # `is`: an id can be reused once its list is gone
        path, body = build(tools=tools, schema=None, **fields)
        if len(_encoded_tools) > 256:
            _encoded_tools.clear()
        entry = _encoded_tools[key] = (tools, json.dumps(body.pop("tools")).encode())
    else:
        path, body = build(tools=None, schema=None, **fields)
    rest = json.dumps(body).encode()
    return path, rest[:-1] + (b', "tools": ' if len(rest) > 2 else b'"tools": ') + entry[1] + b"}"


MAX_REASON = 120


def _error_reason(response: transport.Response, raw: bytes) -> str:
    """The short reason a model API gives in a well-formed JSON error: {"error": {"message":
    ...}} (OpenAI, Anthropic, most compatible servers), {"error": "..."} (Ollama, llama.cpp)
    or {"object": "error", "message": ...} (older vLLM). Anything else (an HTML error page, a
    proxy's or some internal service's answer) gives no reason: its text could be anything,
    and it is shown to authors, so it is never repeated. Control characters are dropped,
    whitespace collapsed, and the reason cut at MAX_REASON characters."""
    if "json" not in response.headers.get("content-type", "").lower():
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


def _raise_for_status(endpoint: ModelEndpoint, response: transport.Response, raw: bytes) -> None:
    status = response.status
    if status < 300:
        return
    reason = _error_reason(response, raw)
    # What a user sees: the status and, from a model API's own error, its short reason; for
    # any other answer only that it was not a model API's.
    detail = f"HTTP {status}: {reason}" if reason else f"HTTP {status}, not a model API's answer"
    if 300 <= status < 400:
        raise ModelError(
            f"The endpoint answered with a redirect (HTTP {status}). Taskwright never follows redirects, so the API key "
            "only ever goes to the configured host: set the base URL to the final address.",
            kind="config",
        )
    if status in (401, 403):
        raise ModelError(
            f"The endpoint {endpoint.name!r} refused the API key from {endpoint.api_key_env or '(no key configured)'} "
            f"({detail}). Check that the key is valid for this endpoint.",
            kind="auth",
        )
    if status == 402 or (status == 429 and "quota" in reason.lower()):
        raise ModelError(f"The provider says the account is out of credit or quota ({detail}).", kind="quota")
    if status == 429:
        raise RetryableError(f"The endpoint is rate-limiting us ({detail}).", kind="rate_limit", retry_after=_retry_after(response))
    if status in (408, 409) or status >= 500:
        raise RetryableError(f"The endpoint failed ({detail}).", kind="server", retry_after=_retry_after(response))
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
