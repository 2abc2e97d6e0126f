"""Gunicorn settings for the web process: `gunicorn -c config/gunicorn.conf.py` (what
`make serve` runs). Every value comes from the environment, with a default fit for one
machine behind a reverse proxy; docs/deploy.md lists them. A command-line flag still wins
over this file (`-w 2`, `-b 0.0.0.0:8000`).
"""

import os

from gunicorn.glogging import Logger


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use (containers)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_workers(cores: int, cap: int) -> int:
    """Gunicorn's rule of thumb, 2 × cores + 1, capped: each worker holds a full Django app
    and up to CONN_MAX_AGE database connections, so dozens would only add memory and
    connections on a large host (run more hosts instead)."""
    return max(1, min(2 * cores + 1, cap))


wsgi_app = "config.wsgi:application"
bind = os.environ.get("BIND") or "127.0.0.1:8000"
workers = int(os.environ.get("WEB_CONCURRENCY") or default_workers(_cores(), int(os.environ.get("WEB_CONCURRENCY_MAX") or 8)))
# Synchronous workers: a request holds its worker until it is answered. No model call ever
# runs inside a web request (they are on the workers), so requests are short; uploads and
# pack imports are the slowest, and are bounded in size.
worker_class = "sync"
# A worker silent for this long is killed and replaced (its request answered 502 by the proxy).
timeout = int(os.environ.get("GUNICORN_TIMEOUT") or 60)
# On SIGTERM (a deploy, a scale-down) workers finish their requests for up to this long.
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT") or 30)
# Above a typical load balancer's idle timeout is the proxy's business; this is the keep-alive
# between the proxy and gunicorn.
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE") or 5)
# Recycle each worker after about this many requests, so a slow leak cannot grow for ever;
# the jitter keeps workers from restarting together.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS") or 2000)
max_requests_jitter = max_requests // 10
# The proxies whose X-Forwarded-Proto / X-Forwarded-For gunicorn believes (comma-separated
# addresses, or * when only the proxy can reach gunicorn). Django's own SECURE_PROXY_SSL_HEADER
# and NUM_PROXIES settings read the same headers.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS") or "127.0.0.1,::1"
# Gunicorn's control socket (for `gunicornc`) is one fixed path per user by default, which
# two servers on one host (a bench beside `make serve`) would take from each other: off
# unless a path is given.
if os.environ.get("GUNICORN_CONTROL_SOCKET"):
    control_socket = os.environ["GUNICORN_CONTROL_SOCKET"]
else:
    control_socket_disable = True
# Heartbeat files of the workers in memory, not on a disk that may stall (containers).
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"

# Logs to standard output / error, for the process supervisor or container runtime to collect.
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or "-"
errorlog = os.environ.get("GUNICORN_ERROR_LOG") or "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL") or "info"
# Client address (and the one the proxy saw), user, time, request line, status, bytes,
# duration in milliseconds, referrer and user agent. No query string secrets: tokens travel in
# the Authorization header, which is never logged.
access_log_format = os.environ.get("GUNICORN_ACCESS_LOG_FORMAT") or (
    '%(h)s "%({x-forwarded-for}i)s" %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s %(M)sms "%(f)s" "%(a)s"'
)


class ProbeQuietLogger(Logger):
    """The access log without the successful health probes (/healthz, /readyz), which a load
    balancer sends every few seconds per node; a failed probe is still logged."""

    PROBE_PATHS = ("/healthz", "/healthz/", "/readyz", "/readyz/")

    def access(self, resp, req, environ, request_time) -> None:
        if req.path in self.PROBE_PATHS and resp.status_code < 400:
            return
        super().access(resp, req, environ, request_time)


logger_class = ProbeQuietLogger
