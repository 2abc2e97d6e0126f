import logging
import re
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import AbstractUser, AnonymousUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.exceptions import ApplicationError, PermissionRefused
from llm import egress, tasks
from llm.errors import ModelError
from llm.models import CallPurpose, EndpointCheck, EndpointCheckStatus, EndpointKind, ModelEndpoint

logger = logging.getLogger(__name__)

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
FIELDS = ("name", "kind", "base_url", "model", "api_key_env", "max_concurrency", "connect_timeout", "read_timeout",
          "max_retries", "stream", "price_input_per_mtok", "price_output_per_mtok", "enabled")


def require_staff(user: AbstractUser | AnonymousUser) -> None:
    if not (user.is_authenticated and user.is_staff):
        raise PermissionRefused("Only a site admin can configure model endpoints.")


def _clean(data: dict) -> dict:
    name = (data.get("name") or "").strip()
    if not name or len(name) > 100:
        raise ApplicationError("Give the endpoint a name (100 characters at most).")
    for field, low, high, unit in (("connect_timeout", 0.1, 600, " seconds"), ("read_timeout", 0.1, 3600, " seconds"),
                                   ("max_retries", 0, 20, ""), ("price_input_per_mtok", 0, 100_000, ""),
                                   ("price_output_per_mtok", 0, 100_000, "")):
        if field in data and data[field] is not None and not low <= float(data[field]) <= high:
            raise ApplicationError(f"{field.replace('_', ' ').capitalize()} must be between {low:g} and {high:g}{unit}.")
    kind = data.get("kind")
    if kind not in EndpointKind.values:
        raise ApplicationError("Choose the endpoint kind.")
    key_env = (data.get("api_key_env") or "").strip()
    if key_env and not ENV_NAME.match(key_env):
        raise ApplicationError(
            "API key variable: enter the NAME of an environment variable (like OPENAI_API_KEY), never the key itself. "
            "Keys stay in the environment of the web server and workers."
        )
    base_url = (data.get("base_url") or "").strip()
    if kind == EndpointKind.OPENAI_COMPATIBLE and not base_url:
        raise ApplicationError("An OpenAI-compatible endpoint needs its base URL, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1.")
    if base_url and not base_url.startswith(("http://", "https://")):
        raise ApplicationError("The base URL must start with http:// or https://.")
    if kind != EndpointKind.SCRIPTED and not (data.get("model") or "").strip():
        raise ApplicationError("Give the provider's model name.")
    if not 1 <= int(data.get("max_concurrency") or 0) <= 1000:
        raise ApplicationError("Max concurrent calls must be between 1 and 1000.")
    return {**data, "name": name, "api_key_env": key_env, "base_url": base_url}


def _check_egress(data: dict, stored: dict) -> None:
    """What the endpoint would send where (llm.egress), refused as a field error (a 400
    naming the field on the API). The client checks again on every call; this is where the
    admin learns of it. An endpoint saved disabled may keep a value saved before the rules,
    so a now-refused one can still be switched off."""
    enabled = data.get("enabled", stored.get("enabled", True))

    def to_check(field: str) -> bool:
        return bool(data[field]) and (enabled or data[field] != stored.get(field))

    errors = {}
    if to_check("api_key_env") and not egress.key_variable_allowed(data["api_key_env"], listed=settings.MODEL_KEY_VARIABLES):
        # The same words whether or not the variable is set: the name alone decides.
        errors["api_key_env"] = "This variable may not hold a model key on this deployment. " + egress.key_variable_rule(
            listed=settings.MODEL_KEY_VARIABLES
        )
    if to_check("base_url") and not settings.MODEL_ALLOW_PRIVATE_NETWORKS:
        parts = urlsplit(data["base_url"])
        try:
            host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:  # a port that is not a number
            host = port = None
        if not host or not egress.host_is_public(host, port):
            # One message for a private address and a name that does not resolve: no map of internal names.
            errors["base_url"] = (
                "The base URL's host must resolve, from this server, to public addresses only: this deployment does not "
                "allow model calls to loopback, private, link-local (cloud metadata) or other non-public addresses. For a "
                "model on this machine or the local network (Ollama, vLLM), a site operator sets MODEL_ALLOW_PRIVATE_NETWORKS=1."
            )
    if errors:
        raise ValidationError(errors)


def endpoint_save(*, user: AbstractUser | AnonymousUser, data: dict, endpoint: ModelEndpoint | None = None) -> ModelEndpoint:
    require_staff(user)
    data = _clean(data)
    # What is in the database, not on `endpoint`: a ModelForm has already put the new values there.
    stored = {}
    if endpoint is not None and endpoint.pk:
        stored = ModelEndpoint.objects.filter(pk=endpoint.pk).values(*FIELDS).first() or {}
    _check_egress(data, stored)  # outside the transaction: it may wait on DNS
    with transaction.atomic():
        if ModelEndpoint.objects.filter(name=data["name"]).exclude(pk=getattr(endpoint, "pk", None)).exists():
            raise ApplicationError(f"There is already an endpoint named {data['name']!r}.")
        endpoint = endpoint or ModelEndpoint()
        for field in FIELDS:
            if field in data:
                setattr(endpoint, field, data[field])
        endpoint.save()
    return endpoint


# --- Test connection ------------------------------------------------------------------------

CHECK_MESSAGES = [{"role": "user", "content": "This is a connection test. Reply with the single word OK."}]
CHECK_MAX_TOKENS = 5


def endpoint_check_start(*, user: AbstractUser | AnonymousUser, endpoint: ModelEndpoint) -> EndpointCheck:
    """Queue one tiny call to the endpoint on the `default` queue, sent once this commits:
    the caller is a web request, and no model call runs inside one. The page polls the check."""
    require_staff(user)
    if not endpoint.enabled:
        raise ApplicationError(f"{endpoint.name} is disabled: enable it before testing its connection.")
    with transaction.atomic():
        check = EndpointCheck.objects.create(endpoint=endpoint, requested_by=user)
        transaction.on_commit(lambda: tasks.endpoint_check_run.delay(check.pk))
    return check


def _check_finished(check_id: int, status: str, *, latency_ms: int | None = None, reason: str = "") -> None:
    EndpointCheck.objects.filter(pk=check_id, status=EndpointCheckStatus.RUNNING).update(
        status=status, latency_ms=latency_ms, reason=reason[:1000], finished_at=timezone.now()
    )


def endpoint_check_run(*, check_id: int) -> None:
    """Run a queued connection test: one attempt (no retries, so the answer comes in one
    timeout at most) through llm.client.chat, logged like every call (purpose "check").
    Claimed by a conditional update: a second delivery of the same message does nothing.
    The model is called outside any transaction."""
    from llm.client import chat  # (imported here: the SDKs are heavy, and the web process never runs this)

    if not EndpointCheck.objects.filter(pk=check_id, status=EndpointCheckStatus.QUEUED).update(status=EndpointCheckStatus.RUNNING):
        return
    check = EndpointCheck.objects.select_related("endpoint").get(pk=check_id)
    endpoint = check.endpoint
    endpoint.max_retries = 0  # (this call only, never saved: a test that retries for minutes tells the admin nothing)
    try:
        result = chat(endpoint=endpoint, messages=CHECK_MESSAGES, purpose=CallPurpose.CHECK, max_tokens=CHECK_MAX_TOKENS)
    except ModelError as error:
        _check_finished(check_id, EndpointCheckStatus.FAILED, reason=str(error))
    except Exception as error:  # a failure nobody foresaw still ends the check, so the page stops waiting
        logger.exception("Connection test %s of endpoint %s failed unexpectedly", check_id, endpoint.pk)
        _check_finished(check_id, EndpointCheckStatus.FAILED, reason=f"The test stopped with an unexpected error ({type(error).__name__}).")
    else:
        _check_finished(check_id, EndpointCheckStatus.OK, latency_ms=result.latency_ms)
