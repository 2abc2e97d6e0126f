"""Benchmark: 200 trial rollouts × 10 model calls (9 tool calls, then a final answer) through
ONE Celery worker process (`--pool threads -c C --prefetch-multiplier 2`: the next rollout
waits in the worker, so a thread that frees starts it at once — with 1, 150–190 ms later) against the fake model server with a fixed
latency per model call, while a thread keeps loading the batch page of the web app.

    ideal = ceil(rollouts / C) × steps × latency      (the pool's concurrency is the limit)
    last lines:  rollouts wall/ideal: <ratio>               (target ≤ 1.15)
                 concurrent rollouts per process: <n>       (target ≥ 50: the peak number of
                                                             rollouts RUNNING at once, polled)

The fake server, in a process of its own as a provider is, decides each reply by counting the
tool results in the request: fewer than steps − 1 → one tool call (list_files, then
read_file), else a final answer. It keeps connections open as providers do. The endpoint's concurrency cap is C + 8, so only the pool
limits concurrency. The task has no rubric criteria, so nothing is graded. The worker and
the web server run with DEBUG off, as in production (--debug to turn it on).

Also printed: the worker's CPU time per model call, and where a model call's time goes in
the worker. The worker is one Python process: every thread needs the GIL for its CPU work,
so it cannot finish more than 1 / (CPU time per model call) calls a second, whatever C is.

Web latency: `manage.py runserver` on a free port, against the same database, serves the
batch page (the first batch's; the task page if the rollouts pages are not there) to a
logged-in session (written straight into the session store), in full and as the htmx
partial that the page polls, one after the other with a 0.1 s pause, for the whole run;
prints `web p95 ms` for the full page. The server has served one page (the task's) before
the run, as a running site's has: its first request imports every view.

Uses the database and broker the environment names (PostgreSQL + Redis recommended:
`DATABASE_URL=… REDIS_URL=…`), in a fresh database it creates and drops; without them a
temporary SQLite file and the filesystem broker. PostgreSQL needs a free connection per
worker thread. A batch holds at most 64 rollouts, so the rollouts go in batches of 50.

    .venv/bin/python bench/rollouts.py [--rollouts 200] [--steps 10] [--latency 0.2] [--threads 64] [--workers 1] [--no-web]
    .venv/bin/python bench/rollouts.py --suite     # the targets of issue 14, one run each, and two comparisons (~4 min)

`--workers N` starts N such processes instead of one (ideal = ceil(rollouts / (N × C)) × …),
to measure what more processes buy; the issue's targets are for one.
"""

import argparse
import contextlib
import importlib.util
import json
import math
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BATCH_SIZE = 50
PATHS = [f"Deal/Doc {i}.md" for i in range(8)]  # the bench world's documents, read by the scripted agent
PAGE_PAUSE = 0.1  # seconds between two page loads of the web client
STALL_SECONDS = 60
POLL_SECONDS = 0.05


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_log(process: subprocess.Popen, log: Path, marker: str, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while marker not in log.read_text(errors="replace"):
        if time.monotonic() > deadline or process.poll() is not None:
            sys.exit(f"{what} did not start:\n{log.read_text(errors='replace')[-5000:]}")
        time.sleep(0.2)


def _stop(process: subprocess.Popen, timeout: float = 30) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _page_url(batch, env_task) -> str:
    """The batch page when the rollouts pages exist, else the task page."""
    from django.urls import NoReverseMatch, reverse

    for name in ("rollout-batch", "batch-detail", "rollout-batch-detail", "rollouts:batch-detail", "rollouts:batch"):
        with contextlib.suppress(NoReverseMatch):
            return reverse(name, kwargs={"pk": batch.pk})
    return _task_url(env_task)


def _task_url(env_task) -> str:
    from django.urls import reverse

    return reverse("task-editor", kwargs={"pk": env_task.pk})


def _session_cookie(user) -> str:
    """A logged-in session written straight into the session store (what login() stores)."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    store = import_module(settings.SESSION_ENGINE).SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return f"{settings.SESSION_COOKIE_NAME}={store.session_key}"


class PageLoader(threading.Thread):
    """Loads the page again and again until stopped, alternately in full and as the htmx
    partial its progress section polls; keeps each load's latency but the first (cold) one's."""

    def __init__(self, url: str, cookie: str) -> None:
        super().__init__(daemon=True)
        self.url, self.cookie = url, cookie
        self.latencies_ms: dict[str, list[float]] = {"page": [], "partial": []}
        self.errors: list[str] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        first = True  # the first load of each kind compiles templates and imports views: left out, as a user's page is warm
        while not self.stopped.is_set():
            for kind, headers in (("page", {}), ("partial", {"HX-Request": "true"})):
                request = urllib.request.Request(self.url, headers={"Cookie": self.cookie, **headers})
                started = time.monotonic()
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:  # loopback
                        response.read()
                        if response.status != 200 or response.url != self.url:
                            self.errors.append(f"HTTP {response.status} at {response.url}")
                except (urllib.error.URLError, OSError) as exc:
                    self.errors.append(str(exc))
                if not first:
                    self.latencies_ms[kind].append((time.monotonic() - started) * 1000)
                self.stopped.wait(PAGE_PAUSE)
            first = False


def _loop_seconds() -> float:
    """A yardstick for the machine's speed right now (it drifts by a factor of two during a day
    on the shared development machine): pure-Python CPU, as the worker's is."""
    started = time.process_time()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.process_time() - started


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] if ordered else float("nan")


def _cpu_seconds(pid: int, part: str = "both") -> float:
    """User + system (or only "user" / "system") CPU time of a process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    user, system = int(fields[11]), int(fields[12])
    return {"both": user + system, "user": user, "system": system}[part] / os.sysconf("SC_CLK_TCK")


def _services_cpu_seconds() -> dict[str, float]:
    """CPU time so far of the PostgreSQL and Redis processes on this machine (all backends
    alive now; the bench's connections stay open for the whole run)."""
    totals = {"postgres": 0.0, "redis-server": 0.0}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            text = stat.read_text()
            name = text[text.index("(") + 1 : text.rindex(")")]
            if name in totals:
                fields = text.rpartition(")")[2].split()
                totals[name] += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return totals


def _reply(done: int, steps: int, latency: float):
    """The scripted answer to a request carrying `done` tool results."""
    from tests.fake_llm import Reply

    if done < steps - 1:
        call = (
            {"name": "list_files", "arguments": {}} if done == 0 else {"name": "read_file", "arguments": {"path": PATHS[done % len(PATHS)]}}
        )
        return Reply(content=f"Step {done + 1}: looking.", tool_calls=[call], delay=latency)
    return Reply(content=f"Final answer after {done} tool calls: the price is $12m.", delay=latency)


def serve_model(steps: int, latency: float) -> None:
    """`--serve-model`: the fake model server in a process of its own, as a provider is: sharing
    the bench's interpreter (its polling and page loads) added its GIL waits to every call
    (wall/ideal 1.35 → 1.5–1.7). One asyncio loop rather than tests.fake_llm's thread per
    connection: with 64 connections the threads' GIL waits made a 200 ms answer take 206 ms on
    average (p99 360 ms), time the bench then counted against the worker. Each answer is
    written `latency` after its request arrived. Keeps connections open, as providers do.
    Prints its URL; on a line on stdin, its figures as JSON."""
    import asyncio

    from tests.fake_llm import _openai_body

    stats = {"calls": 0, "max_in_flight": 0, "connections": 0, "answer_seconds": []}
    in_flight = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight
        stats["connections"] += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                arrived = time.monotonic()
                lines = head.decode("latin-1").split("\r\n")
                headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:] if line)}
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                stats["calls"] += 1
                in_flight += 1
                stats["max_in_flight"] = max(stats["max_in_flight"], in_flight)
                # The tool results in the conversation, counted in the worker's JSON (either
                # json.dumps' separators or the SDK's compact ones) rather than parsed: parsing
                # 20 kB per call was most of this server's CPU.
                reply = _reply(body.count(b'"role": "tool"') + body.count(b'"role":"tool"'), steps, latency)
                payload = json.dumps(_openai_body(reply, {"model": "fake"})).encode()
                await asyncio.sleep(max(0.0, arrived + reply.delay - time.monotonic()))
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(payload), payload))
                await writer.drain()
                in_flight -= 1
                stats["answer_seconds"].append(time.monotonic() - arrived)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        print(json.dumps(stats), flush=True)
        server.close()

    asyncio.run(main())


class ModelServer:
    def __init__(self, steps: int, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve-model", "--steps", str(steps), "--latency", str(latency)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        self.url = self.process.stdout.readline().strip()
        if not self.url:
            sys.exit("The fake model server did not start.")

    def stop(self) -> dict:
        return json.loads(self.process.communicate("stop\n", timeout=60)[0])


# The targets (issue 14), each measured by one run of this script with PostgreSQL + Redis from
# the environment, except the last two, which drop them for the zero-set-up default (SQLite and
# the filesystem broker). "2 processes" share the 64 threads (32 each): as many rollouts at
# once as one process runs, with the CPU of two (PostgreSQL's 100 connections allow no more).
# The zero-set-up target is measured as `make run` runs its workers on this 2-core machine:
# one process per core (scripts/run.sh); the one-process figure is printed beside it.
SUITE = [
    ("rollouts wall/ideal at 1.0 s, 1 process", ["--latency", "1.0"], "≤ 1.05"),
    ("rollouts wall/ideal at 0.2 s, 2 processes", ["--latency", "0.2", "--workers", "2", "--threads", "32"], "≤ 1.15"),
    ("rollouts wall/ideal at 0.2 s, 1 process", ["--latency", "0.2"], "for comparison"),
    ("rollouts wall/ideal zero-set-up with web load", ["--latency", "0.2", "--workers", "2", "--threads", "32", "--zero-set-up"], "≤ 1.3"),
    ("rollouts wall/ideal zero-set-up with web load, 1 process", ["--latency", "0.2", "--zero-set-up"], "for comparison"),
]


def suite() -> None:
    """Each measurement in a process of its own, its full report kept in the output; then the
    targets' lines, exactly as the issue names them."""
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get("REDIS_URL"):
        sys.exit("--suite measures on PostgreSQL + Redis: set DATABASE_URL and REDIS_URL (the zero-set-up run drops them itself).")
    results, peaks = [], []
    for label, options, target in SUITE:
        env = dict(os.environ)
        if "--zero-set-up" in options:
            options = [o for o in options if o != "--zero-set-up"]
            for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "LLM_SLOTS_REDIS_URL"):
                env.pop(name, None)
        print(f"--- {label} ({' '.join(options)}) ---", flush=True)
        run = subprocess.run([sys.executable, __file__, *options], env=env, capture_output=True, text=True, check=False)
        print(run.stdout + run.stderr[-2000:] if run.returncode else run.stdout, flush=True)
        ratio = next(
            (line.split(":", 1)[1].strip() for line in run.stdout.splitlines() if line.startswith("rollouts wall/ideal:")), "failed"
        )
        results.append((label, ratio, target))
        if "--workers" not in options:
            peaks += [
                int(line.split(":", 1)[1].split()[0])
                for line in run.stdout.splitlines()
                if line.startswith("concurrent rollouts per process:")
            ]
    for label, ratio, target in results:
        print(f"{label}: {ratio}    ({target if target == 'for comparison' else f'target {target}'})")
    print(f"concurrent rollouts per process: {min(peaks) if peaks else 0}    (target ≥ 50; the least of the one-process runs)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--steps", type=int, default=10, help="model calls per rollout: steps − 1 tool calls, then the answer")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--threads", type=int, default=64, help="each worker's thread pool (C)")
    parser.add_argument(
        "--pool",
        choices=["threads", "gevent"],
        default="threads",
        help="the worker's pool (gevent: pip install gevent first; it is not a dependency)",
    )
    parser.add_argument("--workers", type=int, default=1, help="worker processes (the targets are for one)")
    parser.add_argument("--debug", action="store_true", help="run with DEBUG on (every query is logged: ~40%% more CPU per query)")
    parser.add_argument("--no-web", action="store_true", help="do not start the web server")
    parser.add_argument("--keep-logs", action="store_true", help="keep the worker's and the web server's logs (printed: where)")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help=(
            "sample the worker with py-spy (pip install py-spy first; it is not a dependency) while the batches run: "
            "collapsed stacks of the thread holding the GIL, into FILE"
        ),
    )
    parser.add_argument("--suite", action="store_true", help="run the targets' measurements and their comparisons in turn (see SUITE)")
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.suite:
        return suite()
    args.py_spy = shutil.which("py-spy", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if args.profile and args.py_spy is None:
        sys.exit("--profile needs py-spy: .venv/bin/pip install py-spy (it is not a dependency).")
    if args.pool == "gevent" and importlib.util.find_spec("gevent") is None:
        sys.exit("--pool gevent needs gevent: .venv/bin/pip install gevent (it is not a dependency).")
    if args.serve_model:
        return serve_model(args.steps, args.latency)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("MODEL_ALLOW_PRIVATE_NETWORKS", "1")  # the fake model server is on 127.0.0.1 (the workers inherit it)
    if args.debug:
        os.environ["DEBUG"] = "1"
    else:  # as in production; plain http on loopback
        os.environ |= {"DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(64), "ALLOWED_HOSTS": "127.0.0.1", "SECURE_SSL_REDIRECT": "0"}
    var_dir = Path(tempfile.mkdtemp(prefix="tw-bench-"))
    os.environ["TASKWRIGHT_VAR_DIR"] = str(var_dir)
    database_url = os.environ.get("DATABASE_URL", "")
    bench_db = f"tw_bench_{uuid.uuid4().hex[:8]}"
    if database_url.startswith("postgres"):
        base = database_url.rsplit("/", 1)[0]
        subprocess.run(["psql", f"{base}/postgres", "-qc", f"CREATE DATABASE {bench_db}"], check=True)
        os.environ["DATABASE_URL"] = f"{base}/{bench_db}"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        _run(args, database_url, var_dir)
        if args.keep_logs:
            print(f"logs: {var_dir}")
        else:
            shutil.rmtree(var_dir, ignore_errors=True)  # kept after a failure: the worker's and the web server's logs
    finally:
        if database_url.startswith("postgres"):
            from django.db import connections

            connections.close_all()
            subprocess.run(["psql", f"{base}/postgres", "-qc", f"DROP DATABASE IF EXISTS {bench_db} WITH (FORCE)"], check=False)


def _run(args, database_url: str, var_dir: Path) -> None:
    from django.conf import settings
    from django.db import connection
    from django.db.models import Avg, Count, F, Max, Min
    from django.utils import timezone

    from accounts.models import Membership, Project, User
    from authoring import services as authoring_services
    from config.celery import app
    from llm.models import ModelEndpoint
    from rollouts import services
    from rollouts.models import Rollout, RolloutStatus, Step, StepKind

    if connection.vendor == "postgresql":
        # Each worker thread holds a connection of its own.
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('max_connections')::int - (SELECT count(*) FROM pg_stat_activity)")
            free = cursor.fetchone()[0]
        needed = args.workers * args.threads + 10
        if free < needed:
            sys.exit(f"PostgreSQL has {free} free connections; the workers' threads and the web server need {needed}.")

    server = ModelServer(args.steps, args.latency)

    user = User.objects.create_user("bench", password=uuid.uuid4().hex)
    project = Project.objects.create(name="Bench", slug="bench")
    Membership.objects.create(project=project, user=user, role="author")
    world = authoring_services.world_create(project_id=project.pk, user=user, title="Bench world", outline="A bench.")
    for path in PATHS:
        authoring_services.document_create(world=world, user=user, path=path, content=f"{path}: the purchase price is $12m. " * 40)
    # No rubric criteria: nothing is queued for grading.
    env_task = authoring_services.env_task_create(
        world=world, user=user, title="Find the price", prompt="Read the data room and state the purchase price.", reference_answer="$12m",
    )
    endpoint = ModelEndpoint.objects.create(
        name="fake", kind="openai_compatible", base_url=server.url, model="fake", max_concurrency=args.workers * args.threads + 8,
        read_timeout=30,
    )

    if settings.LLM_SLOTS_REDIS_URL:  # leases under this id are an earlier run's (its endpoint, in another database)
        import redis

        redis.Redis.from_url(settings.LLM_SLOTS_REDIS_URL).delete(
            f"taskwright:llm-slots:{endpoint.pk}", f"taskwright:llm-slots:{endpoint.pk}:released"
        )
    with app.connection_for_write() as conn, contextlib.suppress(Exception):
        conn.default_channel.queue_purge("rollouts")
    env = dict(os.environ)
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "rollouts", "--pool", args.pool, "-c", str(args.threads),
             "--prefetch-multiplier", "2", "-l", "info", "--without-heartbeat", "--without-gossip", "--without-mingle",
             "-n", f"bench-{uuid.uuid4().hex[:6]}@%h"],
            cwd=ROOT, env=env, stdout=(var_dir / f"worker-{i}.log").open("w"), stderr=subprocess.STDOUT,
        )
        for i in range(args.workers)
    ]
    worker_log = var_dir / "worker-0.log"
    web = loader = profiler = None
    url = ""
    peak_running = 0
    try:
        if not args.no_web:
            port = _free_port()
            web_log = var_dir / "web.log"
            web = subprocess.Popen(
                [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--skip-checks"],
                cwd=ROOT, env={**env, "DB_CONN_MAX_AGE": "0"}, stdout=web_log.open("w"), stderr=subprocess.STDOUT,
            )
            _wait_for_log(web, web_log, "Quit the server", "the web server")
            # One load first, as a running site's server has had: the first request imports
            # every view (~0.7 s of CPU), which would otherwise compete with the worker.
            with urllib.request.urlopen(
                urllib.request.Request(f"http://127.0.0.1:{port}{_task_url(env_task)}", headers={"Cookie": _session_cookie(user)}),
                timeout=60,
            ) as warm:
                warm.read()
        for i, worker in enumerate(workers):
            _wait_for_log(worker, var_dir / f"worker-{i}.log", "ready.", "a worker")
        worker_cpu_before = sum(_cpu_seconds(w.pid) for w in workers)
        worker_system_before = sum(_cpu_seconds(w.pid, "system") for w in workers)
        web_cpu_before = _cpu_seconds(web.pid) if web is not None else 0.0
        bench_cpu_before = time.process_time()
        model_cpu_before = _cpu_seconds(server.process.pid)
        services_before = _services_cpu_seconds()
        profiler = None
        if args.profile:  # nonblocking: sampling does not pause the worker (a stack may be torn now and then)
            profiler = subprocess.Popen(
                [args.py_spy, "record", "--pid", str(workers[0].pid), "--gil", "--nonblocking", "-r", "200", "-f", "raw",
                 "-o", args.profile],
                stdout=subprocess.DEVNULL, stderr=(var_dir / "py-spy.log").open("w"),
            )
        batches = []
        started, started_at = time.monotonic(), timezone.now()
        for offset in range(0, args.rollouts, BATCH_SIZE):
            n = min(BATCH_SIZE, args.rollouts - offset)
            batches.append(services.rollout_batch_start(env_task=env_task, user=user, endpoint=endpoint, n=n))
        queued_in = time.monotonic() - started
        if web is not None:
            url = f"http://127.0.0.1:{port}{_page_url(batches[0], env_task)}"
            loader = PageLoader(url, _session_cookie(user))
            loader.start()
        rollouts = Rollout.objects.filter(batch__in=batches)
        last_progress, finished = time.monotonic(), 0
        while True:  # one light query per poll: the bench process also hosts the fake model server
            counts = dict(rollouts.order_by().values_list("status").annotate(n=Count("id")))
            peak_running = max(peak_running, counts.get(RolloutStatus.RUNNING, 0))
            done = sum(counts.get(status, 0) for status in Rollout.FINISHED)
            if done == args.rollouts:
                break
            if done > finished:
                last_progress, finished = time.monotonic(), done
            elif time.monotonic() - last_progress > STALL_SECONDS:
                stuck = list(rollouts.exclude(status__in=Rollout.FINISHED).values_list("pk", "status")[:10])
                sys.exit(f"No rollout finished for {STALL_SECONDS} s; unfinished: {stuck}. Worker log: {worker_log}")
            time.sleep(POLL_SECONDS)
        wall = time.monotonic() - started
        worker_cpu = sum(_cpu_seconds(w.pid) for w in workers) - worker_cpu_before
        worker_system = sum(_cpu_seconds(w.pid, "system") for w in workers) - worker_system_before
        web_cpu = _cpu_seconds(web.pid) - web_cpu_before if web is not None else 0.0
        bench_cpu = time.process_time() - bench_cpu_before
        model_cpu = _cpu_seconds(server.process.pid) - model_cpu_before
        services_cpu = {name: seconds - services_before[name] for name, seconds in _services_cpu_seconds().items()}
        peak_kib = max(
            next((int(line.split()[1]) for line in Path(f"/proc/{w.pid}/status").read_text().splitlines() if line.startswith("VmHWM")), 0)
            for w in workers
        )
    finally:
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            profiler.wait(timeout=60)
        if loader is not None:
            loader.stopped.set()
            loader.join(timeout=35)
        for process in (web, *workers):
            if process is not None:
                _stop(process)
        stats = server.stop()

    statuses = dict.fromkeys(RolloutStatus.values, 0)
    for status in rollouts.values_list("status", flat=True):
        statuses[status] += 1
    steps = Step.objects.filter(rollout__in=rollouts).count()
    chat_ms = Step.objects.filter(rollout__in=rollouts, kind=StepKind.MODEL).aggregate(ms=Avg("latency_ms"))["ms"] or 0
    took = rollouts.aggregate(took=Avg(F("finished_at") - F("started_at")))["took"]
    span = rollouts.aggregate(first=Min("started_at"), last=Max("finished_at"))
    # The k-th rollout to finish frees a thread for the (C + k)-th to start: the time between is the pool's own.
    starts = sorted(rollouts.values_list("started_at", flat=True))
    finishes = sorted(rollouts.values_list("finished_at", flat=True))
    slots = args.workers * args.threads
    handovers = [(start - finish).total_seconds() * 1000 for start, finish in zip(starts[slots:], finishes, strict=False)]
    cycle_ms = took.total_seconds() * 1000 / args.steps if took else 0
    failures = list(rollouts.exclude(status=RolloutStatus.COMPLETED).values_list("reason", flat=True)[:3])

    calls = stats["calls"]
    ideal = math.ceil(args.rollouts / (args.workers * args.threads)) * args.steps * args.latency
    print(f"database: {'PostgreSQL' if database_url.startswith('postgres') else 'SQLite'}  broker: {app.conf.broker_url.split(':')[0]}  "
          f"DEBUG: {'on' if args.debug else 'off'}  cores: {os.cpu_count()}  "
          f"machine speed: {_loop_seconds():.2f} s for a loop of 10 M additions")
    print(f"rollouts: {args.rollouts} × {args.steps} model calls  latency: {args.latency}s  "
          f"worker processes: {args.workers} × threads (C): {args.threads}")
    print(f"statuses: {statuses}  steps saved: {steps} (expected {args.rollouts * (2 * args.steps - 1)})")
    if failures:
        print(f"first failure reasons: {failures}")
    answered = [1000 * seconds for seconds in stats["answer_seconds"]]
    print(f"model calls: {calls}  peak in flight at the model: {stats['max_in_flight']}  connections: {stats['connections']}  "
          f"the fake server's answer time mean/p50/p99: {sum(answered) / max(len(answered), 1):.0f} / "
          f"{_percentile(answered, 0.5):.0f} / {_percentile(answered, 0.99):.0f} ms")
    print(f"worker CPU{' (all processes)' if args.workers > 1 else ''}: {worker_cpu:.1f}s = {1000 * worker_cpu / max(calls, 1):.2f} ms "
          f"per model call (with its tool call and saved steps; {100 * worker_system / max(worker_cpu, 1e-9):.0f} % of it in the kernel)")
    print(f"per model call, in the worker: {cycle_ms:.0f} ms = {chat_ms:.0f} ms in the llm client "
          f"(the server waits {args.latency * 1000:.0f} ms) "
          f"+ {cycle_ms - chat_ms:.0f} ms in the rest of the agent loop (tool call, saving both steps)")
    print(f"CPU during the run ({os.cpu_count()} cores × wall = {os.cpu_count() * wall:.0f} s): worker {worker_cpu:.1f} s, "
          f"web server {web_cpu:.1f} s, the fake model server {model_cpu:.1f} s, this process (polling, page loads) {bench_cpu:.1f} s, "
          f"PostgreSQL {services_cpu['postgres']:.1f} s, Redis {services_cpu['redis-server']:.1f} s")
    print(f"worker peak memory (VmHWM{', the largest process' if args.workers > 1 else ''}): {peak_kib / 1024:.0f} MiB")
    if handovers:
        print(f"a freed thread started the next rollout after (mean/p50/max): {sum(handovers) / len(handovers):.0f} / "
              f"{_percentile(handovers, 0.5):.0f} / {max(handovers):.0f} ms")
    print(f"wall: {wall:.2f}s  ideal: {ideal:.2f}s  (queuing the batches took {queued_in:.2f}s; the first rollout started "
          f"{(span['first'] - started_at).total_seconds():.2f}s in; a rollout took {took.total_seconds() if took else 0:.2f}s on average)")
    if loader is not None:
        page, partial = loader.latencies_ms["page"], loader.latencies_ms["partial"]
        print(f"web: {url}  loads: {len(page)} pages + {len(partial)} htmx partials  errors: {len(loader.errors)}"
              + (f"  first: {loader.errors[0]}" if loader.errors else ""))
        print(f"web partial p50/p95 ms: {_percentile(partial, 0.5):.0f} / {_percentile(partial, 0.95):.0f}")
        print(f"web page p50 ms: {_percentile(page, 0.5):.0f}")
        print(f"web p95 ms: {_percentile(page, 0.95):.0f}")
    print(f"rollouts wall/ideal: {wall / ideal:.2f}")
    print(f"concurrent rollouts per process: {peak_running // args.workers}  (peak number of rollouts RUNNING at once"
          f"{f' over {args.workers} processes' if args.workers > 1 else ''}, polled every {POLL_SECONDS * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
