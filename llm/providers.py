"""Wire formats: turn our request into a provider's HTTP body and its answer back.

Messages use the OpenAI chat shape everywhere in Taskwright:
{"role": "system"|"user"|"assistant"|"tool", "content": str, "tool_calls"?: [...], "tool_call_id"?: str}
Tools are {"name", "description", "parameters" (JSON schema)}.
"""

import json
from dataclasses import dataclass, field

from llm.errors import RetryableError

STRUCTURED_TOOL = "respond"


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict | None  # None when the model sent arguments that are not a JSON object
    raw_arguments: str = ""


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    structured: object = None  # the parsed JSON when a schema was asked for
    input_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str = ""
    raw: str = ""  # the provider's answer as it came (its JSON, as text; "" from the scripted model)


def _parse_arguments(raw: object) -> tuple[dict | None, str]:
    if isinstance(raw, dict):
        return raw, json.dumps(raw)
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return None, str(raw)
    return (value if isinstance(value, dict) else None), str(raw)


# --- OpenAI-compatible -----------------------------------------------------------------

def openai_request(*, model: str, messages: list[dict], tools: list[dict] | None, schema: dict | None,
                   temperature: float | None, max_tokens: int | None) -> dict:
    body: dict = {"model": model, "messages": messages}
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if tools:
        body["tools"] = [
            {"type": "function", "function": {"name": t["name"], "description": t.get("description", ""), "parameters": t["parameters"]}}
            for t in tools
        ]
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}
    return body


def openai_reply(data: object, *, structured: bool) -> Reply:
    try:
        choice = data["choices"][0]
        message = choice["message"]
        usage = data.get("usage") or {}
        reply = Reply(
            text=message.get("content") or "",
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choice.get("finish_reason") or "",
        )
        for call in message.get("tool_calls") or []:
            arguments, raw = _parse_arguments(call["function"].get("arguments"))
            reply.tool_calls.append(
                ToolCall(id=call.get("id") or "", name=call["function"]["name"], arguments=arguments, raw_arguments=raw)
            )
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise RetryableError(f"The endpoint's answer is not a chat completion ({exc!r}).", kind="response") from None
    if structured:
        reply.structured = _json_or_retry(reply.text)
    return reply


# --- Anthropic ---------------------------------------------------------------------------

def anthropic_messages(messages: list[dict]) -> tuple[str, list[dict]]:
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    out: list[dict] = []
    for m in messages:
        if m["role"] == "system":
            continue
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m.get("tool_call_id", ""), "content": m.get("content", "")}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant" and m.get("tool_calls"):
            blocks = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            for call in m["tool_calls"]:
                arguments, _ = _parse_arguments(call["function"].get("arguments"))
                blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": arguments or {}})
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m["role"], "content": m.get("content", "")})
    return system, out


def anthropic_request(*, model: str, messages: list[dict], tools: list[dict] | None, schema: dict | None,
                      temperature: float | None, max_tokens: int | None) -> dict:
    system, converted = anthropic_messages(messages)
    body: dict = {"model": model, "messages": converted, "max_tokens": max_tokens or 4096}
    if system:
        body["system"] = system
    if temperature is not None:
        body["temperature"] = temperature
    wire_tools = [{"name": t["name"], "description": t.get("description", ""), "input_schema": t["parameters"]} for t in tools or []]
    if schema is not None:
        # Anthropic's way to get JSON that follows a schema: a forced tool call.
        wire_tools.append({"name": STRUCTURED_TOOL, "description": "Give your answer.", "input_schema": schema})
        body["tool_choice"] = {"type": "tool", "name": STRUCTURED_TOOL}
    if wire_tools:
        body["tools"] = wire_tools
    return body


def anthropic_reply(data: object, *, structured: bool) -> Reply:
    try:
        usage = data.get("usage") or {}
        reply = Reply(
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            finish_reason=data.get("stop_reason") or "",
        )
        texts = []
        for block in data["content"]:
            if block["type"] == "text":
                texts.append(block["text"])
            elif block["type"] == "tool_use":
                if structured and block["name"] == STRUCTURED_TOOL:
                    reply.structured = block["input"]
                    continue
                arguments, raw = _parse_arguments(block.get("input"))
                reply.tool_calls.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments, raw_arguments=raw))
        reply.text = "".join(texts)
    except (KeyError, TypeError, AttributeError) as exc:
        raise RetryableError(f"The endpoint's answer is not a Messages response ({exc!r}).", kind="response") from None
    if structured and reply.structured is None:
        reply.structured = _json_or_retry(reply.text)
    return reply


def _json_or_retry(text: str) -> object:
    cleaned = text.strip()
    if cleaned.startswith("```"):
        cleaned = cleaned.strip("`")
        cleaned = cleaned[cleaned.find("\n") + 1 :] if "\n" in cleaned else cleaned
    try:
        return json.loads(cleaned)
    except ValueError:
        raise RetryableError("The model's answer is not valid JSON.", kind="response") from None
