"""What bench/api.py and bench/load.py share: a fresh PostgreSQL database holding one project
of N tasks (bulk-created: seconds, not minutes), gunicorn serving it on loopback with DEBUG
off, and signed-in clients (an API token, a session cookie) that time each request.

Loopback only: the server binds 127.0.0.1 and the clients talk to nothing else.
"""

import http.client
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The buyer may terminate if the audited EBITDA falls short of the warranted figure. " * 20  # ~1.7 kB


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup_django(prefix: str) -> tuple[str, str]:
    """Create a fresh database (PostgreSQL from DATABASE_URL) and set Django up on it, with
    the settings the server will use. Returns (the database's URL, its name)."""
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL server, e.g. postgres://postgres@127.0.0.1:5432/postgres")
    base = database_url.rsplit("/", 1)[0]
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    subprocess.run(["psql", f"{base}/postgres", "-qc", f"CREATE DATABASE {name}"], check=True)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings", DEBUG="0", SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="127.0.0.1", SECURE_SSL_REDIRECT="0", DATABASE_URL=f"{base}/{name}",
        TASKWRIGHT_VAR_DIR=tempfile.mkdtemp(prefix=f"{prefix}-"),
    )
    os.environ.setdefault("CELERY_BROKER_URL", "memory://localhost/")  # pages queue nothing
    # The API's throttles stay on (each request still counts in the cache), with limits no
    # bench reaches: one token asking 8 at a time is what is measured, not refused.
    os.environ.setdefault("API_RATE_PER_TOKEN", "1000000/min")
    os.environ.setdefault("API_RATE_PER_ADDRESS", "1000000/min")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return f"{base}/{name}", name


def drop_database(url: str, name: str) -> None:
    """Drop the bench's database and its scratch directory (logs, media, the demo's logins)."""
    from django.db import connections

    connections.close_all()
    subprocess.run(["psql", f"{url.rsplit('/', 1)[0]}/postgres", "-qc", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], check=False)
    shutil.rmtree(os.environ["TASKWRIGHT_VAR_DIR"], ignore_errors=True)


def add_tasks(project, world, author, tasks: int) -> None:
    """`tasks` tasks on `world`, each with a 1.7 kB prompt and reference answer (what a list
    must not read). updated_at steps back one second every three tasks, older than any task
    there was, so the list's order has ties."""
    from django.db import connection

    from authoring.models import EnvTask

    EnvTask.objects.bulk_create(
        [EnvTask(project=project, world=world, title=f"Task {n:05d}", prompt=TEXT, reference_answer=TEXT,
                 created_by=author, updated_by=author) for n in range(tasks)],
        batch_size=2000,
    )
    with connection.cursor() as cursor:
        cursor.execute("UPDATE authoring_envtask SET updated_at = now() - interval '1 hour' - (id / 3) * interval '1 second' "
                       "WHERE title LIKE 'Task %%' AND world_id = %s", [world.pk])
        # As autovacuum leaves a table some time after a bulk write: the UPDATE's dead row
        # versions gone, the visibility map set (index-only scans need it), statistics fresh.
        cursor.execute("VACUUM ANALYZE")


def build_project(tasks: int):
    """A project whose admin has `tasks` tasks (add_tasks) on one world with a 17 kB outline.
    Returns (project, author, world)."""
    from accounts.models import Membership, Project, Role, User
    from authoring.models import World

    project = Project.objects.create(name="Bench", slug="bench")
    author = User.objects.create_user("bench-author", password=uuid.uuid4().hex)
    Membership.objects.create(project=project, user=author, role=Role.ADMIN)
    world = World.objects.create(project=project, title="Acme acquires Beta", outline=TEXT * 10, created_by=author, updated_by=author)
    add_tasks(project, world, author, tasks)
    return project, author, world


def api_token(user) -> str:
    from rest_framework.authtoken.models import Token

    return Token.objects.get_or_create(user=user)[0].key


def session_cookie(user) -> str:
    """A signed-in session written straight into the session store (what login() stores)."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    store = import_module(settings.SESSION_ENGINE).SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return f"{settings.SESSION_COOKIE_NAME}={store.session_key}"


class Gunicorn:
    """gunicorn as deployed (config/gunicorn.conf.py) with `workers` workers on 127.0.0.1, the
    environment set up above; its access and error logs go to the scratch directory."""

    def __init__(self, workers: int = 2) -> None:
        self.port = free_port()
        self.log = Path(os.environ["TASKWRIGHT_VAR_DIR"]) / "gunicorn.log"
        self.process = subprocess.Popen(
            [str(ROOT / ".venv/bin/gunicorn"), "--config", str(ROOT / "config/gunicorn.conf.py"), "--workers", str(workers),
             "--bind", f"127.0.0.1:{self.port}", "--access-logfile", str(self.log), "--error-logfile", str(self.log)],
            cwd=ROOT, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    sys.exit(f"gunicorn did not start:\n{self.log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.2)

    def worker_pids(self) -> list[int]:
        pids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self.process.pid:
                    pids.append(int(stat.parent.name))
            except (OSError, IndexError, ValueError):
                continue
        return pids

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Client:
    """One keep-alive HTTP/1.1 connection; `get` returns (status, body, milliseconds)."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self.port, self.headers = port, headers
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get(self, path: str) -> tuple[int, bytes, float]:
        start = time.perf_counter()
        try:
            self.connection.request("GET", path, headers=self.headers)
            response = self.connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()  # gunicorn's sync workers close idle keep-alive connections
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.connection.request("GET", path, headers=self.headers)
            response = self.connection.getresponse()
            body = response.read()
        return response.status, body, (time.perf_counter() - start) * 1000

    def close(self) -> None:
        self.connection.close()


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (Linux /proc; 0 for one that is gone)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def database_backends(name: str) -> list[int]:
    """The pids of PostgreSQL's backends serving database `name` (the server is on this machine)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [name])
        return [pid for (pid,) in cursor.fetchall()]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]
