"""Health endpoints for load balancers, orchestrators and monitors.

- `/healthz` (liveness): the process answers. Touches nothing else, so a database or broker
  outage never gets healthy web processes killed and restarted.
- `/readyz` (readiness): the database, the Celery broker, the cache and the default file
  storage each answer, within HEALTH_CHECK_TIMEOUT seconds. 200 with every check and its
  time; 503 naming the checks that failed.

Answered by a middleware placed first in MIDDLEWARE, before anything reads the request: a
probe is sent to the node's own address (so the host check of ALLOWED_HOSTS would refuse
it), over plain HTTP from inside the network (so the HTTPS redirect would send it away),
and it needs no session, CSRF cookie, sign-in or throttle. A 503 is logged as one warning
naming what failed, not as a server error with a traceback per probe.
"""

import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"


def check_database(timeout: float) -> None:
    """A query round trip on this thread's connection (opened, then closed by the caller)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET statement_timeout = %s", [int(timeout * 1000)])
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_broker(timeout: float) -> None:
    """Connect to the broker the workers consume from (CELERY_BROKER_URL, read now), one try,
    every socket operation bounded: a Redis broker answers a PING as the channel opens."""
    from config.celery import app

    url = settings.CELERY_BROKER_URL
    options = {"socket_connect_timeout": timeout, "socket_timeout": timeout}
    # (settings name a transport only for the filesystem broker: any other URL's scheme names its own)
    transport = getattr(settings, "CELERY_BROKER_TRANSPORT", None) if url.startswith("filesystem://") else url.partition("://")[0]
    with app.connection_for_write(url=url, transport=transport, connect_timeout=timeout, transport_options=options) as conn:
        conn.ensure_connection(max_retries=0, timeout=timeout)


def check_cache(timeout: float) -> None:
    """Write, read back and delete a key in the default cache (shared by every process)."""
    from django.core.cache import cache

    key = f"readyz:{uuid.uuid4().hex}"
    cache.set(key, "ok", 30)
    try:
        if cache.get(key) != "ok":
            raise RuntimeError("a value written to the cache did not read back")
    finally:
        cache.delete(key)


def check_storage(timeout: float) -> None:
    """Write, read back and delete a tiny object in the default file storage (local disk or
    the object store every host shares)."""
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    payload = uuid.uuid4().hex.encode()
    name = default_storage.save(f"readyz/{uuid.uuid4().hex}.txt", ContentFile(payload))
    try:
        with default_storage.open(name, "rb") as stored:
            if stored.read() != payload:
                raise RuntimeError("an object written to the storage did not read back")
    finally:
        default_storage.delete(name)


CHECKS: dict[str, Callable[[float], None]] = {
    "database": check_database,
    "broker": check_broker,
    "cache": check_cache,
    "storage": check_storage,
}


def _timed(check: Callable[[float], None], timeout: float) -> tuple[float, str]:
    """Run one check on a pool thread: (milliseconds, "" or the error). The thread's database
    connection is closed after, so probes leave no connection behind."""
    from django.db import connections

    started = time.perf_counter()
    try:
        check(timeout)
        error = ""
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        connections.close_all()
    return (time.perf_counter() - started) * 1000, error


def run_checks(timeout: float | None = None) -> dict[str, dict]:
    """Every check at once, each on its own thread, none waited for beyond `timeout` (a check
    that hangs past it counts as failed; its thread ends when its own socket timeout does)."""
    timeout = settings.HEALTH_CHECK_TIMEOUT if timeout is None else timeout
    pool = ThreadPoolExecutor(max_workers=len(CHECKS), thread_name_prefix="readyz")
    try:
        futures = {name: pool.submit(_timed, check, timeout) for name, check in CHECKS.items()}
        deadline = time.monotonic() + timeout
        results = {}
        for name, future in futures.items():
            try:
                ms, error = future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                ms, error = timeout * 1000, f"no answer within {timeout:g} s"
            results[name] = {"ok": not error, "ms": round(ms, 1)} | ({"error": error} if error else {})
        return results
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _answer(body: dict, status: int) -> HttpResponse:
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response


def liveness(request: HttpRequest) -> HttpResponse:
    return _answer({"status": "ok"}, 200)


def readiness(request: HttpRequest) -> HttpResponse:
    checks = run_checks()
    failed = [name for name, result in checks.items() if not result["ok"]]
    if not failed:
        return _answer({"status": "ok", "checks": checks}, 200)
    logger.warning("Not ready: %s", "; ".join(f"{name}: {checks[name]['error']}" for name in failed))
    response = _answer({"status": "fail", "failed": failed, "checks": checks}, 503)
    # Said once above as a warning; Django would log every failed probe as a server error.
    response._has_been_logged = True
    return response


class HealthCheckMiddleware:
    """Answers /healthz and /readyz (a trailing slash is fine) before any other middleware;
    everything else passes through untouched."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info.rstrip("/")
        if path not in (LIVENESS_PATH, READINESS_PATH):
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            response = _answer({"detail": f"Method {request.method} not allowed."}, 405)
            response["Allow"] = "GET, HEAD"
            return response
        return liveness(request) if path == LIVENESS_PATH else readiness(request)
