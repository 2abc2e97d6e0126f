"""HTTP for model calls: a POST with a JSON body, on the standard library's http.client, over
one keep-alive connection per thread and host.

A worker thread makes one model call at a time, so it needs one connection per host and no
pool: no lock, no scan of idle connections, no request objects. Measured on the rollout
benchmark, httpx spent about twice the CPU per call that this does, in a process where
CPU per call is what limits throughput. What a pooled client would do for us is done here:
separate connect and read timeouts, TLS verified against certifi's bundle, a connection the
server closed while idle replaced once at once, a cap on the answer's size and a deadline
for a server that trickles it. Redirects are never followed and no proxy is read from the
environment: the API key goes to the configured host only.
"""

import http.client
import ssl
import threading
import time
from dataclasses import dataclass
from email.message import Message
from urllib.parse import urlsplit

import certifi

CHUNK = 64 * 1024


class TransportError(Exception):
    """The exchange failed before a whole answer arrived. `kind`: "timeout" (no byte for
    read_timeout), "deadline" (the answer kept trickling past connect + read timeout),
    "too_large" (over max_bytes) or "connection" (refused, reset, TLS, malformed HTTP).
    `stale`: the connection was closed before any answer began."""

    def __init__(self, kind: str, detail: str = "", *, stale: bool = False) -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind, self.detail, self.stale = kind, detail, stale


@dataclass
class Response:
    status: int
    headers: Message
    body: bytes


_tls_context: ssl.SSLContext | None = None
_tls_lock = threading.Lock()
_local = threading.local()


def _tls() -> ssl.SSLContext:
    """The process's TLS context: loading the CA bundle costs ~20 ms, so it is done once and
    shared (an SSLContext may be used from many threads)."""
    global _tls_context
    with _tls_lock:
        if _tls_context is None:
            _tls_context = ssl.create_default_context(cafile=certifi.where())
        return _tls_context


def _connection(scheme: str, host: str, port: int | None, connect_timeout: float) -> http.client.HTTPConnection:
    """This thread's connection to the host; a closed one is kept and opens again on use."""
    key = (scheme, host, port, connect_timeout)
    connections = _local.__dict__.setdefault("connections", {})
    connection = connections.get(key)
    if connection is None:
        if scheme == "https":
            connection = http.client.HTTPSConnection(host, port, timeout=connect_timeout, context=_tls())
        else:
            connection = http.client.HTTPConnection(host, port, timeout=connect_timeout)
        connections[key] = connection
    return connection


def post(url: str, body: bytes, headers: dict[str, str], *, connect_timeout: float, read_timeout: float, max_bytes: int) -> Response:
    """POST `body` and read the whole answer, within `connect_timeout + read_timeout` in all."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TransportError("connection", f"{url} is not an http(s) address")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    deadline = time.monotonic() + connect_timeout + read_timeout
    connection = _connection(parts.scheme, host, parts.port, connect_timeout)
    reused = connection.sock is not None
    try:
        return _exchange(connection, path, body, headers, read_timeout, max_bytes, deadline)
    except TransportError as error:
        if not (error.stale and reused):
            raise
    # The server had closed the idle keep-alive connection: once more, on a new one.
    return _exchange(connection, path, body, headers, read_timeout, max_bytes, deadline)


def _exchange(connection, path, body, headers, read_timeout, max_bytes, deadline) -> Response:
    """One request and its whole answer; any failure closes the connection."""
    answered = False
    try:
        if connection.sock is None:
            connection.connect()
        connection.sock.settimeout(read_timeout)
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        answered = True
        chunks, size = [], 0
        while chunk := response.read1(CHUNK):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise TransportError("too_large")
            if time.monotonic() > deadline:  # a server that trickles bytes forever
                raise TransportError("deadline")
        response.close()  # marks the answer read: the connection takes the next request
    except TransportError:
        connection.close()
        raise
    except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
        connection.close()
        raise TransportError("connection", type(exc).__name__, stale=not answered) from None
    except TimeoutError:
        connection.close()
        raise TransportError("timeout") from None
    except (OSError, http.client.HTTPException) as exc:
        connection.close()
        raise TransportError("connection", type(exc).__name__) from None
    if response.will_close:
        connection.close()
    return Response(status=response.status, headers=response.headers, body=b"".join(chunks))
