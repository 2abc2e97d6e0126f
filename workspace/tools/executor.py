"""execute(): run one tool call from a model. It never raises for bad input: an unknown
tool, arguments that are not a JSON object, a schema violation, a missing item, a bad
path or an oversized value all come back as an error result the model can act on.

Nothing here reads arguments or document text as instructions: a tool does only what
its name says, over its own workspace."""

import functools
import json
import logging

import jsonschema

from core.exceptions import ApplicationError
from core.validation import reject_unstorable

# isort: off
# Importing registers the tools, in the order they are offered: Drive, Mail, Chat, Calendar.
from . import files, mail, chat, calendar  # noqa: F401
# isort: on
from .base import REGISTRY, ToolError, ToolResult, cap, require_writable
from .world import Workspace

logger = logging.getLogger(__name__)

MAX_ARGUMENT_CHARS = 250_000
VALIDATORS = {name: jsonschema.Draft202012Validator(t.spec.parameters) for name, t in REGISTRY.items()}
TYPE_NAMES = {"string": "text", "integer": "a whole number", "boolean": "true or false", "array": "a list", "object": "an object"}


@functools.cache
def tool_specs(*, writable: bool) -> list[dict]:
    """The tool definitions for llm.client.chat(tools=...): read tools always, write tools
    only over a workspace with an overlay. One list per process for each value of `writable`, shared by
    every caller (read it, never change it): llm.client encodes a list of tools once and
    keeps the encoding as long as it sees that list again, so a new list per rollout would
    be encoded again per rollout, and each copy kept."""
    return [t.spec.as_dict() for t in REGISTRY.values() if writable or not t.spec.writes]


def _tool(name: object):
    """The registered tool of that name; None for an unknown name (or a name that is not text)."""
    return REGISTRY.get(name) if isinstance(name, str) else None


def tool_writes(name: object) -> bool:
    """Whether tool `name` can change the workspace (an unknown name runs nothing)."""
    tool = _tool(name)
    return tool is not None and tool.spec.writes


def _schema_problem(name: str, arguments: dict) -> str | None:
    error = jsonschema.exceptions.best_match(VALIDATORS[name].iter_errors(arguments))
    if error is None:
        return None
    field = ".".join(str(p) for p in error.absolute_path) or "arguments"
    limit, value = error.validator_value, error.instance
    messages = {
        "type": lambda: f"{field} must be {' or '.join(TYPE_NAMES.get(t, t) for t in ([limit] if isinstance(limit, str) else limit))}, "
                        f"not {type(value).__name__}.",
        "maxLength": lambda: f"{field} is too long ({len(value):,} characters; at most {limit:,}).",
        "minLength": lambda: f"{field} is empty or too short (at least {limit} characters).",
        "maxItems": lambda: f"{field} has too many items ({len(value)}; at most {limit}).",
        "minItems": lambda: f"{field} needs at least {limit} item{'s' if limit != 1 else ''}.",
        "minimum": lambda: f"{field} must be at least {limit}.",
        "maximum": lambda: f"{field} must be at most {limit:,}.",
    }
    text = messages[error.validator]() if error.validator in messages else error.message[:300].rstrip(".") + "."
    spec = REGISTRY[name].spec.parameters
    params = ", ".join(f"{p}{'' if p in spec['required'] else '?'}" for p in spec["properties"]) or "none"
    return f"Invalid arguments for {name}: {text} Parameters: {params} ('?' = optional)."


def _arguments(name: str, arguments: object) -> dict:
    if arguments is None or arguments == "":
        arguments = {}
    if isinstance(arguments, str | bytes):
        if len(arguments) > MAX_ARGUMENT_CHARS:
            raise ToolError(f"The arguments are too large ({len(arguments):,} characters; at most {MAX_ARGUMENT_CHARS:,}).")
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:
            raise ToolError(f"The arguments for {name} are not valid JSON ({str(exc)[:200]}); send a JSON object such as "
                            '{"path": "Deal/Letter of intent.docx"}.') from None
    if not isinstance(arguments, dict):
        raise ToolError(f"The arguments for {name} must be a JSON object of named parameters, not {type(arguments).__name__}.")
    try:
        size = len(json.dumps(arguments, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        raise ToolError(f"The arguments for {name} must be plain JSON values.") from None
    if size > MAX_ARGUMENT_CHARS:
        raise ToolError(f"The arguments are too large ({size:,} characters; at most {MAX_ARGUMENT_CHARS:,}).")
    try:
        reject_unstorable(arguments, label="An argument")
    except ApplicationError as exc:
        raise ToolError(exc.message) from None
    problem = _schema_problem(name, arguments)
    if problem:
        raise ToolError(problem)
    # JSON Schema's "integer" admits 2.0 (a number with no fraction), which models do send;
    # the tools slice and count with it, so it is made the int it stands for.
    properties = _tool(name).spec.parameters.get("properties", {})
    return {key: int(value) if isinstance(value, float) and properties.get(key, {}).get("type") == "integer" else value
            for key, value in arguments.items()}


def execute(*, workspace: Workspace, name: str, arguments: object) -> ToolResult:
    """Run tool `name` with `arguments` (a dict, or the JSON text a model sent) over the workspace."""
    tool = _tool(name)
    if tool is None:
        known = ", ".join(n for n, t in REGISTRY.items() if workspace.writable or not t.spec.writes)
        return ToolResult(f"Unknown tool {str(name)[:100]!r}. Available tools: {known}.", is_error=True)
    try:
        if tool.spec.writes:
            require_writable(workspace)  # before the arguments: a read-only workspace refuses every write alike
        text = tool.run(workspace, **_arguments(name, arguments))
    except ToolError as exc:
        return ToolResult(cap(exc.message), is_error=True)
    except ApplicationError as exc:  # a service's rule (path, size, storable text, overlay full)
        return ToolResult(cap(exc.message), is_error=True)
    except Exception:
        logger.exception("Tool %s failed on world %s", name, workspace.world.pk)
        return ToolResult(f"{name} failed unexpectedly; nothing was changed by this call. Try again, or another way.", is_error=True)
    return ToolResult(cap(text))
