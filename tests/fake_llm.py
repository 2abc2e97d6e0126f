"""A fake OpenAI-compatible (and Anthropic Messages) HTTP server on loopback.

The one place where the model boundary is faked, at the wire. Tests script what it
answers: replies, tool calls, structured output, latency, 429 with Retry-After, 5xx,
hangs, trickled bytes and malformed JSON. It records every request and the peak number
of requests in flight.

    server.script(Reply(content="hello"), Reply(status=429, headers={"Retry-After": "1"}))
    server.responder = lambda request: Reply(structured={...})   # when the script is empty

A request with `"stream": true` is answered as the provider streams (server-sent events:
OpenAI's chat.completion.chunk lines, Anthropic's message_start … message_stop events).

By default each answer closes its connection (HTTP/1.0). `FakeLLMServer(keep_alive=True)`
keeps connections open as providers do; `idle_timeout` then closes one left idle that long
without telling the client, as providers' load balancers do. `connections` counts the
connections accepted; `answer_seconds` keeps how long each answer took from its request
read to its last byte written (scripted delays included), to tell the server's share of a
call's latency from the client's.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    content: str | None = "OK"
    structured: object = None  # sent as the content, JSON-encoded
    tool_calls: list[dict] = field(default_factory=list)  # [{"name":..., "arguments": dict|str}]
    status: int = 200
    headers: dict = field(default_factory=dict)
    raw: bytes | None = None  # exact body bytes (e.g. malformed JSON)
    delay: float = 0.0  # seconds before answering
    trickle: float = 0.0  # seconds between single bytes of the body
    input_tokens: int = 100
    output_tokens: int = 50
    finish_reason: str = "stop"


@dataclass
class Request:
    path: str
    headers: dict
    body: dict


class FakeLLMServer:
    def __init__(self, *, keep_alive: bool = False, idle_timeout: float | None = None) -> None:
        self.keep_alive, self.idle_timeout = keep_alive, idle_timeout
        self.connections = 0
        self.answer_seconds: list[float] = []
        self.requests: list[Request] = []
        self.queue: list[Reply] = []
        self.responder = lambda request: Reply()
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.socket.listen(1024)  # many clients may connect at once (socketserver's backlog is 5)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "FakeLLMServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.queue.clear()
            self.max_in_flight = 0
            self.connections = 0
            self.answer_seconds.clear()
        self.responder = lambda request: Reply()

    def _next(self, request: Request) -> Reply:
        with self._lock:
            if self.queue:
                return self.queue.pop(0)
        return self.responder(request)

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            # http.server writes the headers and the body in two sends; with Nagle's algorithm
            # on, the body waits for the client's delayed ACK of the headers (~40 ms on Linux
            # loopback). Providers' servers set TCP_NODELAY, and so does this one.
            disable_nagle_algorithm = True
            protocol_version = "HTTP/1.1" if server.keep_alive else "HTTP/1.0"
            timeout = server.idle_timeout  # an idle keep-alive connection is closed after this

            def setup(self):
                super().setup()
                with server._lock:
                    server.connections += 1

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                started = time.monotonic()
                length = int(self.headers.get("content-length", 0))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(request)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                answering = True

                def answered():
                    # Counted out just before the answer's last byte goes: counted out after it,
                    # the client could read the answer, hand its slot over and have the next call
                    # arrive while this thread still counted the call it had finished.
                    nonlocal answering
                    if answering:
                        answering = False
                        with server._lock:
                            server.in_flight -= 1

                try:
                    reply = server._next(request)
                    if reply.delay:
                        time.sleep(reply.delay)
                    anthropic = self.path.endswith("/messages")
                    streamed = bool(body.get("stream")) and reply.status < 400 and reply.raw is None
                    if streamed:
                        payload = (_anthropic_events(reply) if anthropic else _openai_chunks(reply, body)).encode()
                    else:
                        payload = reply.raw if reply.raw is not None else json.dumps(
                            _anthropic_body(reply) if anthropic else _openai_body(reply, body)
                        ).encode()
                    self.send_response(reply.status)
                    self.send_header("content-type", "text/event-stream" if streamed else "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if reply.trickle:
                        for i in range(len(payload)):
                            if i == len(payload) - 1:
                                answered()
                            self.wfile.write(payload[i : i + 1])
                            self.wfile.flush()
                            time.sleep(reply.trickle)
                    else:
                        answered()
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    answered()
                    with server._lock:
                        server.answer_seconds.append(time.monotonic() - started)

        return Handler


def _openai_body(reply: Reply, request: dict) -> dict:
    if reply.status >= 400:
        return {"error": {"message": reply.content or "error", "type": "fake_error"}}
    content = json.dumps(reply.structured) if reply.structured is not None else reply.content
    message: dict = {"role": "assistant", "content": content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": c["arguments"] if isinstance(c["arguments"], str) else json.dumps(c["arguments"]),
                },
            }
            for i, c in enumerate(reply.tool_calls)
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": request.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else reply.finish_reason}],
        "usage": {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens},
    }


def _anthropic_body(reply: Reply) -> dict:
    if reply.status >= 400:
        return {"type": "error", "error": {"type": "fake_error", "message": reply.content or "error"}}
    blocks = []
    if reply.structured is not None:
        blocks.append({"type": "tool_use", "id": "toolu_s", "name": "respond", "input": reply.structured})
    elif reply.content:
        blocks.append({"type": "text", "text": reply.content})
    for i, c in enumerate(reply.tool_calls):
        blocks.append({"type": "tool_use", "id": f"toolu_{i}", "name": c["name"], "input": c["arguments"]})
    return {"type": "message", "role": "assistant", "content": blocks, "stop_reason": "end_turn",
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}}


def _sse(events: list[tuple[str | None, dict | str]]) -> str:
    lines = []
    for name, data in events:
        if name:
            lines.append(f"event: {name}")
        lines.append("data: " + (data if isinstance(data, str) else json.dumps(data)))
        lines.append("")
    return "\n".join(lines) + "\n"


def _openai_chunks(reply: Reply, request: dict) -> str:
    """The answer as OpenAI streams it: the text in pieces, each tool call's arguments in
    pieces, then the finish reason, then (with stream_options.include_usage) the usage."""
    model = request.get("model", "fake")

    def chunk(delta: dict, finish: str | None = None, **extra) -> dict:
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

    content = json.dumps(reply.structured) if reply.structured is not None else reply.content
    events = [(None, chunk({"role": "assistant", "content": ""}))]
    for start in range(0, len(content or ""), 7):
        events.append((None, chunk({"content": content[start : start + 7]})))
    for i, call in enumerate(reply.tool_calls):
        arguments = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
        events.append((None, chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                                      "function": {"name": call["name"], "arguments": ""}}]})))
        for start in range(0, len(arguments), 9):
            events.append((None, chunk({"tool_calls": [{"index": i, "function": {"arguments": arguments[start : start + 9]}}]})))
    events.append((None, chunk({}, "tool_calls" if reply.tool_calls else reply.finish_reason)))
    if (request.get("stream_options") or {}).get("include_usage"):
        events.append((None, {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [],
                              "usage": {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens,
                                        "total_tokens": reply.input_tokens + reply.output_tokens}}))
    events.append((None, "[DONE]"))
    return _sse(events)


def _anthropic_events(reply: Reply) -> str:
    """The answer as Anthropic's Messages API streams it."""
    body = _anthropic_body(reply)
    events: list = [("message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake", "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": reply.input_tokens, "output_tokens": 0}}})]
    for index, block in enumerate(body["content"]):
        if block["type"] == "text":
            events.append(
                ("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            )
            for start in range(0, len(block["text"]), 7):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": {"type": "text_delta", "text": block["text"][start : start + 7]}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
            arguments = json.dumps(block["input"])
            for start in range(0, len(arguments), 9):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": {"type": "input_json_delta",
                                                                 "partial_json": arguments[start : start + 9]}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": reply.output_tokens}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)
