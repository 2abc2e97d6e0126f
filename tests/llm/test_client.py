import json
import os
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest

from llm.client import chat
from llm.errors import ModelError
from llm.models import ModelCall, ModelEndpoint
from tests.fake_llm import Reply
from tests.worker import database_url_for_subprocess

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hi."}]
SCHEMA = {"type": "object", "required": ["title", "amount"], "properties": {"title": {"type": "string"}, "amount": {"type": "number"}}}


def test_a_plain_call_is_sent_with_the_key_and_recorded(endpoint, fake_llm):
    fake_llm.script(Reply(content="Hi.", input_tokens=1000, output_tokens=500))
    result = chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting", project_id=7)
    assert result.text == "Hi." and (result.input_tokens, result.output_tokens) == (1000, 500)
    assert result.cost == Decimal("0.002")  # 1000 × $1/M + 500 × $2/M
    request = fake_llm.requests[0]
    assert request.path == "/v1/chat/completions" and request.headers["authorization"] == "Bearer sk-test-secret-key"
    assert request.body["model"] == "fake-model" and request.body["messages"] == MESSAGES
    call = ModelCall.objects.get()
    assert (call.purpose, call.outcome, call.project_id, call.input_tokens, call.cost) == ("drafting", "ok", 7, 1000, Decimal("0.002"))


def test_429_honours_retry_after_then_succeeds(endpoint, fake_llm):
    fake_llm.script(Reply(status=429, headers={"Retry-After": "1"}, content="slow down"), Reply(content="done"))
    started = time.monotonic()
    result = chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert result.text == "done" and result.attempts == 2
    assert time.monotonic() - started >= 1.0


def test_5xx_and_malformed_json_are_retried(endpoint, fake_llm):
    fake_llm.script(Reply(status=500), Reply(status=503), Reply(raw=b"{not json"), Reply(content="finally"))
    result = chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert result.text == "finally" and result.attempts == 4


def test_retries_are_bounded_and_the_failure_is_recorded(endpoint, fake_llm):
    fake_llm.responder = lambda request: Reply(status=502, content="bad gateway")
    with pytest.raises(ModelError) as caught:
        chat(endpoint=endpoint, messages=MESSAGES, purpose="judge")
    assert caught.value.kind == "server" and "Gave up after 4 attempts" in caught.value.message
    assert len(fake_llm.requests) == 4
    call = ModelCall.objects.get()
    assert call.outcome == "error" and call.attempts == 4 and "502" in call.error


def test_a_hanging_server_times_out_and_a_trickling_one_too(endpoint, fake_llm):
    endpoint.read_timeout = 0.5
    endpoint.max_retries = 1
    endpoint.save()
    fake_llm.script(Reply(delay=3), Reply(trickle=0.05, content="x" * 200))
    with pytest.raises(ModelError) as caught:
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert caught.value.kind == "timeout"


@pytest.mark.parametrize(
    ("status", "kind", "words"), [(401, "auth", "refused the API key"), (403, "auth", "FAKE_LLM_KEY"), (402, "quota", "out of credit")]
)
def test_auth_and_quota_errors_fail_fast_with_a_clear_message(endpoint, fake_llm, status, kind, words):
    fake_llm.responder = lambda request: Reply(status=status, content="nope")
    with pytest.raises(ModelError) as caught:
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert caught.value.kind == kind and words in caught.value.message
    assert len(fake_llm.requests) == 1
    assert "sk-test-secret-key" not in caught.value.message


def test_quota_429_fails_fast(endpoint, fake_llm):
    fake_llm.responder = lambda request: Reply(status=429, content="You exceeded your current quota")
    with pytest.raises(ModelError) as caught:
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert caught.value.kind == "quota" and len(fake_llm.requests) == 1


def test_missing_key_says_which_variable_to_set(endpoint, fake_llm, monkeypatch):
    monkeypatch.delenv("FAKE_LLM_KEY")
    with pytest.raises(ModelError, match="FAKE_LLM_KEY, which is not set"):
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert fake_llm.requests == []


def test_redirects_are_never_followed_so_the_key_stays_home(endpoint, fake_llm):
    fake_llm.script(Reply(status=307, headers={"Location": "http://127.0.0.2:9/steal"}))
    with pytest.raises(ModelError, match="never follows redirects"):
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert len(fake_llm.requests) == 1


def test_structured_output_is_validated_and_re_asked(endpoint, fake_llm):
    fake_llm.script(Reply(structured={"title": "LOI"}), Reply(content="```json\n{\"title\": \"LOI\", \"amount\": 12}\n```"))
    result = chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting", schema=SCHEMA)
    assert result.structured == {"title": "LOI", "amount": 12}
    second = fake_llm.requests[1].body
    assert second["response_format"]["json_schema"]["schema"] == SCHEMA
    assert "does not match the JSON schema" in second["messages"][-1]["content"] and "amount" in second["messages"][-1]["content"]


def test_structured_output_gives_up_with_a_clear_error(endpoint, fake_llm):
    fake_llm.responder = lambda request: Reply(structured={"title": 5})
    with pytest.raises(ModelError, match="did not follow the required structure after 3 tries") as caught:
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting", schema=SCHEMA)
    assert caught.value.kind == "response"


def test_tool_calls_are_parsed_and_bad_arguments_kept_raw(endpoint, fake_llm):
    fake_llm.script(
        Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "a.md"}}, {"name": "search", "arguments": "{broken"}])
    )
    tools = [{"name": "read_file", "description": "Read", "parameters": {"type": "object"}}]
    result = chat(endpoint=endpoint, messages=MESSAGES, purpose="rollout", tools=tools)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("read_file", {"path": "a.md"}), ("search", None)]
    assert result.tool_calls[1].raw_arguments == "{broken"
    assert fake_llm.requests[0].body["tools"][0]["function"]["name"] == "read_file"


def test_anthropic_kind_speaks_the_messages_api(db, fake_llm, monkeypatch):
    monkeypatch.setenv("TASKWRIGHT_MODEL_KEY_ANTHROPIC_TEST", "sk-ant-test")
    endpoint = ModelEndpoint.objects.create(
        name="claude", kind="anthropic", base_url=fake_llm.url, model="claude-x", api_key_env="TASKWRIGHT_MODEL_KEY_ANTHROPIC_TEST"
    )
    fake_llm.script(Reply(structured={"title": "LOI", "amount": 3}))
    result = chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting", schema=SCHEMA)
    assert result.structured == {"title": "LOI", "amount": 3}
    request = fake_llm.requests[0]
    assert request.path == "/v1/messages" and request.headers["authorization"] == "Bearer sk-ant-test"  # as the SDK sends it
    assert request.body["system"] == "You are terse." and request.body["tool_choice"] == {"type": "tool", "name": "respond"}
    assert "anthropic-version" in request.headers


def test_scripted_endpoint_answers_without_network_and_says_so(db, fake_llm):
    endpoint = ModelEndpoint.objects.create(name="sample", kind="scripted")
    first = chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting", schema=SCHEMA)
    again = chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting", schema=SCHEMA)
    assert first.structured == again.structured and first.scripted
    assert first.structured["title"].startswith("[Sample text from the scripted model]")
    assert "scripted" in str(endpoint) and fake_llm.requests == []


def test_disabled_endpoint_is_refused(endpoint):
    endpoint.enabled = False
    endpoint.save()
    with pytest.raises(ModelError, match="disabled"):
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")


# --- HTTP under the SDKs: kept connections, timeouts, malformed answers ----------------------

@pytest.fixture
def keep_alive_server():
    from tests.fake_llm import FakeLLMServer

    server = FakeLLMServer(keep_alive=True, idle_timeout=0.3).start()
    yield server
    server.stop()


@pytest.fixture
def keep_alive_endpoint(db, keep_alive_server, settings):
    settings.LLM_BACKOFF_BASE = 5  # a retry with backoff would show in the time taken
    return ModelEndpoint.objects.create(name="kept", kind="openai_compatible", base_url=keep_alive_server.url, model="m", read_timeout=5)


def test_calls_from_one_thread_share_one_connection(keep_alive_endpoint, keep_alive_server):
    for word in ("one", "two", "three"):
        keep_alive_server.script(Reply(content=word))
        assert chat(endpoint=keep_alive_endpoint, messages=MESSAGES, purpose="drafting").text == word
    assert keep_alive_server.connections == 1 and len(keep_alive_server.requests) == 3


def test_a_connection_the_server_closed_while_idle_is_replaced_at_once(keep_alive_endpoint, keep_alive_server):
    keep_alive_server.script(Reply(content="before"), Reply(content="after"))
    chat(endpoint=keep_alive_endpoint, messages=MESSAGES, purpose="drafting")
    time.sleep(0.6)  # the server drops the idle connection without telling the client
    started = time.monotonic()
    result = chat(endpoint=keep_alive_endpoint, messages=MESSAGES, purpose="drafting")
    assert result.text == "after" and result.attempts == 1 and time.monotonic() - started < 2
    assert keep_alive_server.connections == 2


def test_an_answer_over_the_size_cap_is_refused(endpoint, fake_llm, monkeypatch):
    monkeypatch.setattr("llm.client.MAX_RESPONSE_BYTES", 1000)
    endpoint.max_retries = 0
    endpoint.save()
    fake_llm.script(Reply(content="x" * 5000))
    with pytest.raises(ModelError, match="answer is too large"):
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")


def test_an_endpoint_nobody_listens_on_says_it_could_not_be_reached(db, settings):
    import socket

    settings.LLM_BACKOFF_BASE = 0.01
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = ModelEndpoint.objects.create(
        name="gone", kind="openai_compatible", base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1
    )
    with pytest.raises(ModelError) as caught:
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert caught.value.kind == "server"
    assert f"Could not reach the endpoint at http://127.0.0.1:{port}/v1 (ConnectionRefusedError)" in caught.value.message


def _one_shot_server(answer: bytes):
    """A server that reads one request and writes `answer` as it is, then closes."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
            while len(rest) < length:
                rest += conn.recv(65536)
            conn.sendall(answer)
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


def test_chunked_answers_and_answers_ended_by_closing_are_read_whole(db):
    body = json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": "chunked ok"}, "finish_reason": "stop"}], "usage": {}}
    ).encode()
    chunked = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunked += b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:10], body[10:])) + b"0\r\n\r\n"
    until_close = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body.replace(b"chunked ok", b"closed ok")
    for answer, text in ((chunked, "chunked ok"), (until_close, "closed ok")):
        endpoint = ModelEndpoint.objects.create(
            name=text, kind="openai_compatible", base_url=_one_shot_server(answer), model="m", max_retries=0
        )
        assert chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting").text == text


def test_a_malformed_answer_is_a_clear_connection_error(db, settings):
    settings.LLM_BACKOFF_BASE = 0.01
    endpoint = ModelEndpoint.objects.create(
        name="bad", kind="openai_compatible", base_url=_one_shot_server(b"SPDY/9 what\r\n\r\n"), model="m", max_retries=0
    )
    with pytest.raises(ModelError, match="malformed or incomplete HTTP"):
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")


def test_tool_definitions_are_sent_whole_with_every_call(endpoint, fake_llm):
    tools = [
        {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
    ]
    for text in ("one", "two"):
        fake_llm.script(Reply(content=text))
        assert chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting", tools=tools).text == text
    tools.append({"name": "list_files", "description": "List.", "parameters": {"type": "object", "properties": {}}})
    fake_llm.script(Reply(content="three"))
    chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting", tools=list(tools))
    sent = [[t["function"]["name"] for t in r.body["tools"]] for r in fake_llm.requests]
    assert sent == [["read_file"], ["read_file"], ["read_file", "list_files"]]
    assert fake_llm.requests[0].body["tools"][0]["function"]["parameters"] == tools[0]["parameters"]
    assert fake_llm.requests[0].body["messages"] == MESSAGES and fake_llm.requests[0].body["model"] == "fake-model"

    claude = ModelEndpoint.objects.create(name="claude", kind="anthropic", base_url=fake_llm.url, model="claude-x")
    fake_llm.script(Reply(content="four"))
    chat(endpoint=claude, messages=MESSAGES, purpose="drafting", tools=tools)  # the same list, in the other provider's format
    assert fake_llm.requests[-1].body["tools"][0] == {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": tools[0]["parameters"],
    }


def test_a_trickling_answer_is_cut_at_the_deadline(endpoint, fake_llm):
    """A call is cut at the first byte after connect + read timeout, even when every byte
    arrives well within the read timeout: so it never outlasts connect + 2 × read timeout
    (the endpoint slot's lease relies on it)."""
    endpoint.connect_timeout, endpoint.read_timeout, endpoint.max_retries = 0.2, 1.0, 0
    endpoint.save()
    fake_llm.script(Reply(trickle=0.8, content="x" * 200))  # a byte every 0.8 s: never idle for 1 s, never done
    started = time.monotonic()
    with pytest.raises(ModelError, match="did not finish answering within 1 s"):
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert time.monotonic() - started < 1.2 + 1.0  # the deadline passed by at most one read timeout (here: the byte at 1.6 s)


def _tls_server(ca, *, answer: bytes | None):
    """An HTTPS server on localhost with a certificate from `ca`: reads one request and
    writes `answer`, or (None) never answers."""
    import socket
    import ssl
    import threading

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        conn, _ = listener.accept()
        with context.wrap_socket(conn, server_side=True) as tls:
            data = b""
            while b"\r\n\r\n" not in data:
                data += tls.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")  # the whole request, so closing after the answer resets nothing
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
            while len(rest) < length:
                rest += tls.recv(65536)
            if answer is None:
                stop.wait(10)
            else:
                tls.sendall(answer)
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"https://localhost:{listener.getsockname()[1]}/v1", stop


def test_https_answers_are_read_and_a_silent_server_times_out(db, settings, monkeypatch):
    """Over HTTPS (where the waits stay Python's): an answer arrives whole, and a server
    that never answers is a timeout after the read timeout, not a hang."""
    import ssl

    import trustme

    from llm import http

    ca = trustme.CA()
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    monkeypatch.setattr(http, "_tls_context", client_context)
    settings.LLM_BACKOFF_BASE = 0.01
    body = json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": "over tls"}, "finish_reason": "stop"}], "usage": {}}
    ).encode()
    url, _ = _tls_server(
        ca, answer=b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    endpoint = ModelEndpoint.objects.create(name="tls", kind="openai_compatible", base_url=url, model="m", max_retries=0)
    assert chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting").text == "over tls"

    url, stop = _tls_server(ca, answer=None)
    silent = ModelEndpoint.objects.create(name="silent", kind="openai_compatible", base_url=url, model="m", max_retries=0, read_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        chat(endpoint=silent, messages=MESSAGES, purpose="drafting")
    stop.set()
    assert caught.value.kind == "timeout" and "did not answer within 0.5 s" in caught.value.message
    assert 0.45 < time.monotonic() - started < 2


def test_a_server_that_reads_the_request_slowly_is_cut_at_the_deadline(db, settings):
    """The deadline holds while the request is still being sent: a server that takes a few
    kilobytes at a time, never pausing as long as the read timeout, does not keep a large
    request going for ever."""
    import socket
    import threading

    settings.LLM_BACKOFF_BASE = 0.01
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve():
        conn, _ = listener.accept()
        with conn:
            while not stop.is_set() and conn.recv(4096):
                stop.wait(0.1)  # 40 kB a second
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    endpoint = ModelEndpoint.objects.create(
        name="slow reader", kind="openai_compatible", base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1", model="m",
        max_retries=0, connect_timeout=0.2, read_timeout=1.0,
    )
    big = [{"role": "user", "content": "x" * 16_000_000}]  # more than the kernel's buffers take at once
    started = time.monotonic()
    with pytest.raises(ModelError, match="did not finish answering within 1 s"):
        chat(endpoint=endpoint, messages=big, purpose="drafting")
    stop.set()
    assert time.monotonic() - started < 1.2 + 0.5


# --- the official SDKs: streaming, and no credential from the environment ------------------

@pytest.mark.parametrize("kind", ["openai_compatible", "anthropic"])
def test_a_streaming_endpoint_gets_the_same_answer_in_events(db, fake_llm, kind):
    endpoint = ModelEndpoint.objects.create(name=f"streamed {kind}", kind=kind, base_url=fake_llm.url, model="m", stream=True)
    fake_llm.script(
        Reply(content="A streamed answer, in several pieces.", input_tokens=321, output_tokens=45),
        Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "/deal/SPA.docx"}}]),
        Reply(structured={"title": "LOI", "amount": 3}),
    )
    tools = [
        {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
    ]
    text = chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert text.text == "A streamed answer, in several pieces." and (text.input_tokens, text.output_tokens) == (321, 45)
    called = chat(endpoint=endpoint, messages=MESSAGES, purpose="rollout", tools=tools)
    assert [(c.name, c.arguments) for c in called.tool_calls] == [("read_file", {"path": "/deal/SPA.docx"})]
    structured = chat(endpoint=endpoint, messages=MESSAGES, purpose="judge", schema=SCHEMA)
    assert structured.structured == {"title": "LOI", "amount": 3}
    assert all(request.body["stream"] is True for request in fake_llm.requests)
    assert ModelCall.objects.filter(outcome="ok").count() == 3


def test_a_streamed_error_is_the_same_error(db, fake_llm):
    endpoint = ModelEndpoint.objects.create(
        name="streamed", kind="openai_compatible", base_url=fake_llm.url, model="m", stream=True, max_retries=0
    )
    fake_llm.script(Reply(status=401, content="bad key"))
    with pytest.raises(ModelError) as caught:
        chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert caught.value.kind == "auth" and "HTTP 401: bad key" in caught.value.message
    # This endpoint has no key: the error says so, rather than naming a key that was never sent.
    assert "none is configured" in caught.value.message and "refused the API key" not in caught.value.message


@pytest.mark.parametrize("kind", ["openai_compatible", "anthropic"])
def test_an_endpoint_without_a_key_sends_no_credential_even_when_the_sdks_variables_are_set(db, fake_llm, monkeypatch, kind):
    """The SDKs read OPENAI_API_KEY, OPENAI_ADMIN_KEY, ANTHROPIC_API_KEY … when given no key;
    Taskwright always gives one (or none at all), so only a variable the admin chose is sent."""
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.setenv(name, f"env-secret-{name}")
    endpoint = ModelEndpoint.objects.create(name=f"keyless {kind}", kind=kind, base_url=fake_llm.url, model="m")
    assert chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting").text == "OK"
    headers = fake_llm.requests[0].headers
    assert "authorization" not in headers and "x-api-key" not in headers
    assert not [value for value in headers.values() if "env-secret" in value]


def test_one_sdk_client_per_endpoint_and_process_and_a_new_one_when_it_changes(endpoint, fake_llm):
    from llm import client as llm_client

    chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    first = llm_client._sdk_client(endpoint, "sk-test-secret-key")
    chat(endpoint=endpoint, messages=MESSAGES, purpose="drafting")
    assert llm_client._sdk_client(endpoint, "sk-test-secret-key") is first
    endpoint.read_timeout = 33
    assert llm_client._sdk_client(endpoint, "sk-test-secret-key") is not first


def test_the_model_sdks_load_only_where_a_model_is_called():
    """openai and anthropic hold ~90 MB: the web process and a packs worker never load them."""
    script = ("import sys, django; django.setup(); import config.urls, config.celery, packs.services, rollouts.agent; "
              "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": database_url_for_subprocess()}
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("kind", ["openai_compatible", "anthropic"])
def test_the_tools_are_encoded_once_and_every_request_carries_them(db, fake_llm, kind, monkeypatch):
    from llm import client

    endpoint = ModelEndpoint.objects.create(name=f"tools {kind}", kind=kind, base_url=fake_llm.url, model="m")
    path = {"type": "object", "properties": {"path": {"type": "string"}}}
    tools = [{"name": "read_file", "description": "Lire un fichier — «vite».", "parameters": path}]
    encoded = []
    monkeypatch.setattr(client, "_json", lambda value, encode=client._json: encoded.append(value) or encode(value))
    fake_llm.script(Reply(content="one"), Reply(content="two"), Reply(structured={"title": "LOI", "amount": 3}))
    chat(endpoint=endpoint, messages=MESSAGES, purpose="rollout", tools=tools)
    chat(endpoint=endpoint, messages=[*MESSAGES, {"role": "assistant", "content": "one"}], purpose="rollout", tools=tools)
    chat(endpoint=endpoint, messages=MESSAGES, purpose="judge", tools=tools, schema=SCHEMA)  # its tools differ (Anthropic's answer tool)

    for request, messages, schema in zip(
        fake_llm.requests, [MESSAGES, [*MESSAGES, {"role": "assistant", "content": "one"}], MESSAGES], [None, None, SCHEMA], strict=True
    ):
        assert request.body == client.request_body(kind=kind, model="m", messages=messages, tools=tools, schema=schema)
    tool_lists = [value for value in encoded if isinstance(value, list)]
    assert len(tool_lists) == 1  # the two plain calls shared one encoding of the tools
