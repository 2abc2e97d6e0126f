"""The `scripted` endpoint kind: deterministic sample answers computed in-process, with no
network and no model (like Inspect AI's mockllm). Its output is plainly marked as sample
text so it is never mistaken for a model's work.

With a JSON schema it builds the smallest instance that validates, filling text fields
with a labelled sentence that echoes the request; without one it answers a labelled
sentence. The same request always gets the same answer.
"""

import hashlib
import json
import re

from llm.providers import Reply, ToolCall

LABEL = "[Sample text from the scripted model]"


def _request_hint(messages: list[dict]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user" and m.get("content"):
            return " ".join(str(m["content"]).split())[:160]
    return ""


def _instance(schema: dict, name: str, hint: str, seed: int, depth: int = 0) -> object:
    if "enum" in schema:
        return schema["enum"][seed % len(schema["enum"])]
    if "const" in schema:
        return schema["const"]
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            return _instance(schema[combinator][0], name, hint, seed, depth)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        required = schema.get("required", list(props))
        return {key: _instance(props.get(key, {}), key, hint, seed + i, depth + 1) for i, key in enumerate(required)}
    if kind == "array":
        count = max(schema.get("minItems", 1 if depth < 3 else 0), 1 if depth < 3 else 0)
        return [_instance(schema.get("items", {}), name, hint, seed + i, depth + 1) for i in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", 1)
        return low if kind == "integer" else float(low)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    text = f"{LABEL} {name.replace('_', ' ')}" + (f" for: {hint}" if hint and depth <= 2 else "")
    if schema.get("format") == "date-time":
        return "2026-01-05T09:00:00+00:00"
    if schema.get("format") == "date":
        return "2026-01-05"
    if schema.get("format") == "email":
        return "sample@example.com"
    limit = schema.get("maxLength")
    return text[:limit] if limit else text


def _agent_step(messages: list[dict], tools: list[dict]) -> ToolCall | None:
    """A fixed, visible routine when tools are offered: list the files, read the first one,
    then answer. Enough to show a trajectory with real tool calls, never a real attempt."""
    names = {t["name"] for t in tools}
    results = [m for m in messages if m.get("role") == "tool"]
    if not results and "list_files" in names:
        return ToolCall(id="scripted_1", name="list_files", arguments={"recursive": True}, raw_arguments='{"recursive": true}')
    if len(results) == 1 and "read_file" in names:
        match = re.search(r'"path":\s*"([^"]+)"', str(results[0].get("content", "")))
        if match:
            arguments = {"path": match.group(1)}
            return ToolCall(id="scripted_2", name="read_file", arguments=arguments, raw_arguments=json.dumps(arguments))
    return None


def answer(*, messages: list[dict], tools: list[dict] | None = None, schema: dict | None = None) -> Reply:
    hint = _request_hint(messages)
    seed = int(hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()[:8], 16)
    input_tokens = sum(len(str(m.get("content", ""))) for m in messages) // 4 + 1
    if schema is not None:
        structured = _instance(schema, "answer", hint, seed)
        text = json.dumps(structured)
        return Reply(text=text, structured=structured, input_tokens=input_tokens, output_tokens=len(text) // 4 + 1, finish_reason="stop")
    call = _agent_step(messages, tools) if tools and schema is None else None
    if call is not None:
        return Reply(
            text=f"{LABEL} Calling {call.name}.", tool_calls=[call], input_tokens=input_tokens, output_tokens=20, finish_reason="tool_calls"
        )
    text = f"{LABEL} This is a deterministic sample answer, not a model's work. Request: {hint}"
    return Reply(text=text, input_tokens=input_tokens, output_tokens=len(text) // 4 + 1, finish_reason="stop")
