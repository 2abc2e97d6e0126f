import re

from django.db import transaction

from core.exceptions import ApplicationError
from llm.models import EndpointKind, ModelEndpoint

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
FIELDS = ("name", "kind", "base_url", "model", "api_key_env", "max_concurrency", "connect_timeout", "read_timeout",
          "max_retries", "price_input_per_mtok", "price_output_per_mtok", "enabled")


def _require_staff(user) -> None:
    if not (user.is_authenticated and user.is_staff):
        raise ApplicationError("Only a site admin can configure model endpoints.")


def _clean(data: dict) -> dict:
    name = (data.get("name") or "").strip()
    if not name or len(name) > 100:
        raise ApplicationError("Give the endpoint a name (100 characters at most).")
    for field, low, high in (("connect_timeout", 0.1, 600), ("read_timeout", 0.1, 3600), ("max_retries", 0, 20),
                             ("price_input_per_mtok", 0, 100_000), ("price_output_per_mtok", 0, 100_000)):
        if field in data and data[field] is not None and not low <= float(data[field]) <= high:
            raise ApplicationError(f"{field.replace('_', ' ').capitalize()} must be between {low:g} and {high:g}.")
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


@transaction.atomic
def endpoint_save(*, user, data: dict, endpoint: ModelEndpoint | None = None) -> ModelEndpoint:
    _require_staff(user)
    data = _clean(data)
    if ModelEndpoint.objects.filter(name=data["name"]).exclude(pk=getattr(endpoint, "pk", None)).exists():
        raise ApplicationError(f"There is already an endpoint named {data['name']!r}.")
    endpoint = endpoint or ModelEndpoint()
    for field in FIELDS:
        if field in data:
            setattr(endpoint, field, data[field])
    endpoint.save()
    return endpoint
