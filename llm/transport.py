"""HTTP for model calls: a POST with a JSON body over one keep-alive connection per thread
and host, with h11 (the HTTP/1.1 protocol library under httpcore and uvicorn) for the
protocol and a plain socket for the bytes.

A worker thread makes one model call at a time, so it needs one connection per host and no
pool: no lock, no scan of idle connections, no request objects. In a process where CPU per
call is what limits throughput this matters: on the rollout benchmark httpx spent about
twice the CPU per call of http.client, and http.client spent a third of its own parsing the
answer's headers with the email package; h11 reads them with a few regular expressions.
What a pooled client would do for us is done here: separate connect and read timeouts, TLS
verified against certifi's bundle, a connection the server closed while idle replaced once
at once, a cap on the answer's size and a deadline for a server that trickles it. Redirects
are never followed and no proxy is read from the environment: the API key goes to the
configured host only. Where a connection is opened the host is resolved once, every address
is checked (llm.egress: only public ones unless the deployment allows private networks) and
the socket connects to one of exactly those addresses; TLS still verifies, and the Host
header still names, the configured host name.

Over plain HTTP (a model server on the local network, the benchmark's) the waits are the
kernel's (SO_RCVTIMEO, SO_SNDTIMEO on a blocking socket), not Python's socket timeout:
with a timeout set, Python polls before every send and receive, and each poll lets go of
the interpreter lock and waits for it again, behind every other busy thread of the worker;
here a receive is one system call. Python's TLS layer retries a receive the kernel gave up
on, so over HTTPS the waits stay Python's. Either way a limit is set again only when it
changes (setting Python's is a system call that lets go of the lock too).
"""

import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import certifi
import h11

from llm import egress

CHUNK = 64 * 1024


class TransportError(Exception):
    """The exchange failed before a whole answer arrived. `kind`: "timeout" (no byte for
    read_timeout, or no connection within connect_timeout), "deadline" (the answer kept
    trickling past connect + read timeout), "too_large" (over max_bytes), "blocked" (the
    host resolves to an address that is not public and private networks are not allowed:
    nothing was sent) or "connection" (refused, reset, TLS, malformed HTTP, a name that does
    not resolve). `stale`: the connection was closed before any answer began."""

    def __init__(self, kind: str, detail: str = "", *, stale: bool = False) -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind, self.detail, self.stale = kind, detail, stale


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
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


class _Connection:
    """One thread's connection to one host: a socket (None while closed) and h11's state."""

    def __init__(self, scheme: str, host: str, port: int | None, connect_timeout: float, allow_private: bool) -> None:
        self.scheme, self.host, self.connect_timeout, self.allow_private = scheme, host, connect_timeout, allow_private
        self.port = port or (443 if scheme == "https" else 80)
        self.host_header = host if port is None else f"{host}:{port}"
        self.sock: socket.socket | None = None
        self.protocol: h11.Connection | None = None
        self.wait_limit: float | None = None  # the limit on one send or receive now (None: not set yet)

    def open(self, deadline: float) -> None:
        timeout = min(self.connect_timeout, deadline - time.monotonic())
        try:
            addresses = egress.resolve(self.host.strip("[]"), self.port, allow_private=self.allow_private)
        except egress.BlockedAddress:
            raise TransportError("blocked", f"{self.host} does not resolve to a public address") from None
        except UnicodeError:  # a name IDNA cannot encode
            raise TransportError("connection", "invalid host name") from None
        sock = _connect(addresses, timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # the request goes in one send anyway
            if self.scheme == "https":  # (the handshake within the connect timeout)
                sock = _tls().wrap_socket(sock, server_hostname=self.host.strip("[]"))
            else:
                sock.settimeout(None)  # blocking from here: the waits are the kernel's (limit())
        except BaseException:
            sock.close()
            raise
        self.sock, self.protocol, self.wait_limit = sock, h11.Connection(h11.CLIENT), None

    def limit(self, seconds: float) -> None:
        """Each send or receive from now on gives up after `seconds` without progress."""
        if seconds == self.wait_limit:
            return
        if self.scheme == "https":  # Python keeps the waits (see the module's docstring)
            self.sock.settimeout(seconds)
        else:
            value = struct.pack("ll", *divmod(max(1, int(seconds * 1_000_000)), 1_000_000))  # a struct timeval; all zeros would mean no limit
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
        self.wait_limit = seconds

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock = self.protocol = None


def _connect(addresses: list[tuple], timeout: float) -> socket.socket:
    """A TCP connection to the first of the resolved (and checked) addresses that accepts
    one, as socket.create_connection would, but without resolving the name again."""
    error: OSError | None = None
    for family, kind, proto, _, address in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except OSError as exc:
            sock.close()
            error = exc
        else:
            return sock
    raise error or OSError("no address to connect to")


def _connection(scheme: str, host: str, port: int | None, connect_timeout: float, allow_private: bool) -> _Connection:
    """This thread's connection to the host; a closed one is kept and opens again on use.
    Whether private networks were allowed is part of the key: a connection checked under a
    wider rule is never reused under a narrower one."""
    key = (scheme, host, port, connect_timeout, allow_private)
    connections = _local.__dict__.setdefault("connections", {})
    connection = connections.get(key)
    if connection is None:
        connection = connections[key] = _Connection(scheme, host, port, connect_timeout, allow_private)
    return connection


STALE_WITHIN = 1.0  # seconds: a reused connection that ends this soon after the request, with no byte of answer, had been closed idle


def post(
    url: str, body: bytes, headers: dict[str, str], *, connect_timeout: float, read_timeout: float, max_bytes: int,
    allow_private: bool = False,
) -> Response:
    """POST `body` and read the whole answer, within `connect_timeout + read_timeout` in all
    (the deadline holds across the one retry on a fresh connection, too). Only to public
    addresses unless `allow_private`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TransportError("connection", f"{url} is not an http(s) address")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    deadline = time.monotonic() + connect_timeout + read_timeout
    connection = _connection(parts.scheme, host, parts.port, connect_timeout, allow_private)
    reused = connection.sock is not None
    try:
        return _exchange(connection, path, body, headers, read_timeout, max_bytes, deadline)
    except TransportError as error:
        if not (error.stale and reused):
            raise
    # The server had closed the idle keep-alive connection: once more, on a new one.
    return _exchange(connection, path, body, headers, read_timeout, max_bytes, deadline)


def _wait_limit(connection: _Connection, read_timeout: float, deadline: float) -> None:
    """The next send or receive may wait read_timeout, but never past the deadline."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TransportError("deadline")
    connection.limit(read_timeout if left > read_timeout else left)


def _send_all(connection: _Connection, data: bytes, read_timeout: float, deadline: float) -> None:
    """Send `data`, checking the deadline between the pieces the socket takes: a limit on one
    send restarts with each piece, so a server that reads slowly but steadily would otherwise
    keep a large request going past the deadline."""
    view = memoryview(data)
    while view:
        _wait_limit(connection, read_timeout, deadline)
        view = view[connection.sock.send(view):]


def _exchange(connection: _Connection, path, body, headers, read_timeout, max_bytes, deadline) -> Response:
    """One request and its whole answer; any failure closes the connection."""
    answered = received = False
    sent_at = None
    try:
        if connection.sock is None:
            if deadline - time.monotonic() <= 0:
                raise TransportError("deadline")
            connection.open(deadline)
        sock, protocol = connection.sock, connection.protocol
        request = h11.Request(method="POST", target=path, headers=[
            ("host", connection.host_header), ("content-length", str(len(body))), ("accept-encoding", "identity"), *headers.items(),
        ])
        _send_all(connection, protocol.send(request) + protocol.send(h11.Data(data=body)) + protocol.send(h11.EndOfMessage()), read_timeout, deadline)
        sent_at = time.monotonic()
        status, answer_headers, chunks, size = 0, {}, [], 0
        while True:
            event = protocol.next_event()
            if event is h11.NEED_DATA:
                _wait_limit(connection, read_timeout, deadline)
                data = sock.recv(CHUNK)
                if not data and not received:
                    raise _closed(sent_at)
                received = True
                protocol.receive_data(data)  # b"": the server closed the connection (the end of an HTTP/1.0 body)
            elif isinstance(event, h11.Response):
                answered = True
                status, answer_headers = event.status_code, {name.decode("latin-1"): value.decode("latin-1") for name, value in event.headers}
            elif isinstance(event, h11.Data):
                chunks.append(event.data)
                size += len(event.data)
                if size > max_bytes:
                    raise TransportError("too_large")
            elif isinstance(event, h11.EndOfMessage):
                break
            # an InformationalResponse (100 Continue) is followed by the real one
    except TransportError:
        connection.close()
        raise
    except h11.RemoteProtocolError:
        connection.close()
        raise TransportError("connection", "malformed or incomplete HTTP") from None
    except (BrokenPipeError, ConnectionResetError) as exc:
        connection.close()
        if received:
            raise TransportError("connection", type(exc).__name__) from None
        raise _closed(sent_at, type(exc).__name__) from None
    except (TimeoutError, BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):  # the kernel's limit ran out (EAGAIN)
        connection.close()
        # Which limit ran out: the deadline (a trickling answer, or a slow connect on the retry) or read_timeout.
        raise TransportError("deadline" if time.monotonic() >= deadline - 0.01 and answered else "timeout") from None
    except OSError as exc:
        connection.close()
        raise TransportError("connection", type(exc).__name__) from None
    except BaseException:  # anything else (a bug, an interrupt) leaves h11 mid-exchange: never reuse it
        connection.close()
        raise
    if protocol.our_state is h11.DONE and protocol.their_state is h11.DONE:
        protocol.start_next_cycle()  # the connection takes the next request
    else:  # the server said it closes the connection (or HTTP/1.0)
        connection.close()
    return Response(status=status, headers=answer_headers, body=b"".join(chunks))


def _closed(sent_at: float | None, detail: str = "RemoteDisconnected") -> TransportError:
    """The connection ended before a byte of the answer. Stale (worth one retry at once, if it
    was a reused one) when that came right away: a server that had closed it while idle.
    Later, the server may have worked on the request: the client's own retries decide."""
    stale = sent_at is None or time.monotonic() - sent_at < STALE_WITHIN
    return TransportError("connection", detail, stale=stale)
