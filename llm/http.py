"""The HTTP client under the model SDKs: where a model call's bytes may go, and how many.

The official `openai` and `anthropic` SDKs speak their APIs; each is given an httpx client
from here (`http_client()`), which adds what is ours:

- **Only checked addresses.** The connection pool's network backend resolves the host once,
  checks every address (llm.egress: only public ones unless the deployment allows private
  networks) and connects to one of exactly those addresses, so a name that resolves
  differently a moment later (DNS rebinding) gains nothing. TLS still verifies, and SNI and
  the Host header still name, the configured host name (httpcore takes both from the URL,
  not from the address connected to).
- **No redirects, no proxy from the environment** (`trust_env=False`): the key goes to the
  configured host only.
- **A cap on the answer's size and a deadline** for the whole exchange (connect + read
  timeout from the request's start), checked as the body arrives: a server that trickles
  its answer is cut at the first byte after the deadline, so a call never outlasts
  connect + 2 × read timeout.

httpx has no public way to give its transport a network backend, so `CheckedTransport`
swaps the connection pool it built for one with ours (`_pool`, the attribute every httpx
transport has had since 0.18). The tests of llm.egress's rules at connection time fail if a
release of httpx stops honouring it.
"""

import ssl
import threading
import time
from collections.abc import Iterator

import certifi
import httpcore2
import httpx2

from llm import egress


class AnswerTooLarge(Exception):
    """The answer grew past the cap; the connection was closed."""


class DeadlinePassed(Exception):
    """The answer was still arriving at the deadline; the connection was closed."""


_tls_context: ssl.SSLContext | None = None
_tls_lock = threading.Lock()


def tls_context() -> ssl.SSLContext:
    """The process's TLS context: loading the CA bundle costs ~20 ms, so it is done once and
    shared (an SSLContext may be used from many threads)."""
    global _tls_context
    with _tls_lock:
        if _tls_context is None:
            _tls_context = ssl.create_default_context(cafile=certifi.where())
        return _tls_context


class CheckedBackend(httpcore2.SyncBackend):
    """Opens TCP connections only to addresses llm.egress allows, and to exactly those."""

    def __init__(self, *, allow_private: bool) -> None:
        self.allow_private = allow_private

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            entries = egress.resolve(host.strip("[]"), port, allow_private=self.allow_private)
        except OSError as exc:  # a name that does not resolve
            raise httpcore2.ConnectError(type(exc).__name__) from exc
        failure: Exception | None = None
        for entry in entries:  # as socket.create_connection would, without resolving the name again
            try:
                return super().connect_tcp(entry[4][0], port, timeout=timeout, local_address=local_address, socket_options=socket_options)
            except httpcore2.ConnectError as exc:
                failure = exc
        raise failure or httpcore2.ConnectError("no address to connect to")


class _Bounded(httpx2.SyncByteStream):
    """An answer's body, cut off past `max_bytes` or the deadline."""

    def __init__(self, stream: httpx2.SyncByteStream, *, max_bytes: int, deadline: float) -> None:
        self.stream, self.max_bytes, self.deadline = stream, max_bytes, deadline

    def __iter__(self) -> Iterator[bytes]:
        size = 0
        for chunk in self.stream:
            size += len(chunk)
            if size > self.max_bytes:
                raise AnswerTooLarge()
            if time.monotonic() > self.deadline:
                raise DeadlinePassed()
            yield chunk

    def close(self) -> None:
        self.stream.close()


class CheckedTransport(httpx2.HTTPTransport):
    def __init__(self, *, allow_private: bool, max_bytes: int, budget_seconds: float, keepalive: int) -> None:
        super().__init__(verify=tls_context(), trust_env=False)
        self._pool = httpcore2.ConnectionPool(
            ssl_context=tls_context(),
            max_connections=None,  # the endpoint's concurrency cap (llm.concurrency) is what limits calls
            max_keepalive_connections=keepalive,
            keepalive_expiry=60.0,
            network_backend=CheckedBackend(allow_private=allow_private),
        )
        self.max_bytes, self.budget_seconds = max_bytes, budget_seconds

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        deadline = time.monotonic() + self.budget_seconds
        response = super().handle_request(request)
        response.stream = _Bounded(response.stream, max_bytes=self.max_bytes, deadline=deadline)
        return response


def http_client(*, connect_timeout: float, read_timeout: float, allow_private: bool, max_bytes: int, keepalive: int) -> httpx2.Client:
    """An httpx client for one endpoint's SDK client: checked addresses, no redirects, no
    proxy or certificates from the environment, the endpoint's timeouts."""
    return httpx2.Client(
        transport=CheckedTransport(
            allow_private=allow_private, max_bytes=max_bytes, budget_seconds=connect_timeout + read_timeout, keepalive=keepalive,
        ),
        timeout=httpx2.Timeout(read_timeout, connect=connect_timeout),
        follow_redirects=False,
        trust_env=False,
    )


def cause(error: BaseException, *kinds: type[BaseException]) -> BaseException | None:
    """The first exception of one of `kinds` in the chain that raised `error` (the SDKs wrap
    httpx's errors, which wrap httpcore's, which wrap the socket's)."""
    seen = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, kinds):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
