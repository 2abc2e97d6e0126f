"""A real Celery worker for tests: a subprocess on the real broker and the test database.

Use the `celery_worker_process` fixture from a test that commits its data (it pulls in
`transactional_db`; `live_server` tests are transactional anyway), so the worker, which has
its own database connection, sees what the test wrote and the test sees what it wrote.

- Database: the subprocess gets DATABASE_URL naming pytest-django's TEST database
  (test_<name> on PostgreSQL, var/test.sqlite3 on SQLite), read when the fixture runs.
- Broker: the one settings chose (Redis when REDIS_URL / CELERY_BROKER_URL is set, else the
  filesystem broker under var/broker). On Redis the worker's queues are purged first, so
  a message left by an earlier run cannot be picked up.
- Ready: the fixture waits for the worker's "ready." log line; on a test failure the
  worker's log is attached to the report.
- More workers (a test that kills one and starts the next): start_worker(), which does
  not purge, and stop_worker().
"""

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

# Every queue settings route to, so any job a test queues has a consumer.
WORKER_QUEUES = ("default", "drafting", "rollouts", "grading", "packs")
READY_TIMEOUT = 60
LOG_SECTION = "celery worker log"


@dataclass
class WorkerProcess:
    process: subprocess.Popen
    log_path: Path
    nodename: str

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def is_alive(self) -> bool:
        return self.process.poll() is None


def database_url_for_subprocess() -> str:
    """DATABASE_URL for the connection this process uses now (the test database)."""
    db = connection.settings_dict
    engine = db["ENGINE"]
    if engine == "django.db.backends.sqlite3":
        name = str(db["NAME"])
        if name == ":memory:" or name.startswith("file:"):
            raise RuntimeError("A worker process cannot share an in-memory SQLite database; settings must name a file.")
        return f"sqlite:///{Path(name).resolve()}"
    if engine == "django.db.backends.postgresql":
        user = quote(db.get("USER") or "", safe="")
        password = quote(db.get("PASSWORD") or "", safe="")
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = db.get("HOST") or ""
        host = f"[{host}]" if ":" in host else quote(host, safe="")
        port = f":{db['PORT']}" if db.get("PORT") else ""
        return f"postgres://{auth}{host}{port}/{quote(db['NAME'], safe='')}"
    raise RuntimeError(f"celery_worker_process does not know how to point a worker at {engine}.")


def purge_queues(queues: tuple[str, ...]) -> None:
    from config.celery import app

    with app.connection_for_write() as conn:
        channel = conn.default_channel
        for queue in queues:
            channel.queue_purge(queue)


def _wait_until_ready(worker: WorkerProcess, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = worker.log_text()
        if f"{worker.nodename} ready." in text:
            return
        if not worker.is_alive():
            raise RuntimeError(f"The Celery worker exited with code {worker.process.returncode}:\n{text}")
        time.sleep(0.2)
    raise RuntimeError(f"The Celery worker was not ready after {timeout:.0f}s:\n{worker.log_text()}")


def _stop(worker: WorkerProcess) -> None:
    if not worker.is_alive():
        return
    worker.process.send_signal(signal.SIGTERM)  # warm shutdown: finish the running task
    try:
        worker.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        worker.process.kill()
        worker.process.wait(timeout=10)


def start_worker(
    log_dir: Path, *, concurrency: int = 2, queues: tuple[str, ...] = WORKER_QUEUES, broker_url: str | None = None,
    extra_env: dict[str, str] | None = None, cwd: Path | None = None,
) -> WorkerProcess:
    """Start a worker subprocess on the test database and the real broker and wait until it
    is ready. It does not purge the queues: a test that kills a worker starts the next one
    with this, and what the killed worker left behind must still be there. The caller
    stops it (stop_worker). The environment is this process's, read now: a variable a test
    sets (CELERY_VISIBILITY_TIMEOUT) reaches the worker. `broker_url`: another broker than
    settings' (a test's own Redis server). `extra_env`: variables that win over those (another host's
    TASKWRIGHT_VAR_DIR and MEDIA_ROOT, its storage); `cwd`: its working directory (the project's
    by default; elsewhere, put the project on PYTHONPATH through `extra_env`)."""
    nodename = f"test-{uuid.uuid4().hex[:8]}@localhost"
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_subprocess(),
        "CELERY_BROKER_URL": broker_url or settings.CELERY_BROKER_URL,
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "DEBUG": os.environ.get("DEBUG") or "1",
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "PYTHONUNBUFFERED": "1",
        # The fake model server is on 127.0.0.1; the key variables the test process allows.
        "MODEL_ALLOW_PRIVATE_NETWORKS": "1",
        "MODEL_KEY_VARIABLES": ",".join(settings.MODEL_KEY_VARIABLES),
        **(extra_env or {}),
    }
    log_path = Path(log_dir) / f"worker-{nodename.partition('@')[0]}.log"
    command = [
        sys.executable, "-m", "celery", "-A", "config", "worker",
        "-Q", ",".join(queues), "--pool", "threads", "-c", str(concurrency), "-l", "info", "-n", nodename,
        "--without-gossip", "--without-mingle", "--without-heartbeat",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=cwd or settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    worker = WorkerProcess(process=process, log_path=log_path, nodename=nodename)
    try:
        _wait_until_ready(worker, READY_TIMEOUT)
    except BaseException:
        stop_worker(worker)
        raise
    return worker


stop_worker = _stop


@pytest.fixture
def celery_worker_process(transactional_db, tmp_path_factory) -> Iterator[WorkerProcess]:
    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        purge_queues(WORKER_QUEUES)
    worker = start_worker(tmp_path_factory.mktemp("celery-worker"))
    try:
        yield worker
    finally:
        _stop(worker)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the worker's log to a failed test that used the worker."""
    report = yield
    worker = getattr(item, "funcargs", {}).get("celery_worker_process")
    if report.failed and isinstance(worker, WorkerProcess):
        report.sections.append((LOG_SECTION, worker.log_text()[-20_000:]))
    return report
