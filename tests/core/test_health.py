"""/healthz and /readyz: unauthenticated, no session, answered before the host check and the
HTTPS redirect; readyz names each check and its time, and the failed one with a 503, in
bounded time when the broker is down or hangs."""

import logging
import socket
import threading
import time

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def silent_port():
    """A port that accepts connections and never says a word (a broker that hangs)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(timeout=2)
    for connection in accepted:
        connection.close()
    server.close()


@pytest.fixture
def storage_in_tmp(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_healthz_answers_without_sign_in_session_or_dependencies(settings):
    # A broker and database that are not there change nothing: liveness is the process only.
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{_closed_port()}/0"
    # Nor does any throttle: a prober asks every few seconds, forever.
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "1/min", "address": "1/min"}}
    client = Client()
    for _ in range(3):
        assert client.get("/healthz").status_code == 200
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert response["Cache-Control"] == "no-store"
    assert "Set-Cookie" not in response.headers and not response.cookies
    assert client.get("/healthz/").status_code == 200
    assert client.post("/healthz").status_code == 405


def test_readyz_names_every_check_and_its_time(storage_in_tmp, tmp_path):
    response = Client().get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "broker", "cache", "storage"}
    for result in body["checks"].values():
        assert result["ok"] is True and isinstance(result["ms"], float) and result["ms"] >= 0
    assert not response.cookies
    # The storage check cleaned up after itself.
    assert not list((tmp_path / "media").rglob("*.txt"))


def test_probes_from_any_host_over_plain_http_are_answered(settings, storage_in_tmp):
    # An orchestrator probes the pod's address over http: neither the host check nor the
    # HTTPS redirect may turn it away.
    settings.ALLOWED_HOSTS = ["taskwright.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    client = Client(HTTP_HOST="10.1.2.3:8000")
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    assert client.get("/api/schema/").status_code == 400  # everything else is still checked


def test_readyz_fails_naming_the_broker_on_a_closed_port(settings, storage_in_tmp, caplog):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{_closed_port()}/0"
    with caplog.at_level(logging.INFO):
        response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail" and body["failed"] == ["broker"]
    assert body["checks"]["broker"]["ok"] is False and body["checks"]["broker"]["error"]
    assert all(body["checks"][name]["ok"] for name in ("database", "cache", "storage"))
    # One warning naming the failure; not a server error per probe.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r for r in caplog.records if r.levelno == logging.WARNING and "broker" in r.getMessage()]


def test_readyz_does_not_hang_on_a_broker_that_never_answers(settings, storage_in_tmp, silent_port):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{silent_port}/0"
    settings.HEALTH_CHECK_TIMEOUT = 0.5
    started = time.monotonic()
    response = Client().get("/readyz")
    elapsed = time.monotonic() - started
    assert response.status_code == 503 and response.json()["failed"] == ["broker"]
    assert elapsed < 2, f"readyz took {elapsed:.1f} s"


def test_readyz_fails_naming_the_cache_when_it_is_down(settings, storage_in_tmp):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": f"redis://127.0.0.1:{_closed_port()}/0"}
    }
    response = Client().get("/readyz")
    assert response.status_code == 503 and response.json()["failed"] == ["cache"]


def test_readyz_fails_naming_the_storage_when_it_cannot_write(settings, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the media folder should be")
    settings.MEDIA_ROOT = blocker
    response = Client().get("/readyz")
    assert response.status_code == 503 and response.json()["failed"] == ["storage"]
