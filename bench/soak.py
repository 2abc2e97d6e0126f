"""Soak: batches of 48 trial rollouts with grading on a real worker, while the worker is
SIGKILLed at random (and started again at once, as a supervisor does) and the Redis server
is stopped for about a second; then what survived.

    .venv/bin/python bench/soak.py [--batches 3] [--fault-seconds 150] [--kills 6] [--latency 1.0]

Needs PostgreSQL (DATABASE_URL, any database of the server: the bench creates its own and
drops it) and a `redis-server` binary: the bench runs its OWN Redis on a free loopback port
(append-only file on, so a stop and start keeps its data, as a production Redis restarting
does) for the broker, the cache and the endpoint slots, and never touches another. The
fake OpenAI-compatible model server (tests.fake_llm) runs in this process.

Each rollout: list_files → send_email (a write: its result must be recorded once, and the
email sent once) → read_file → final answer; each finished rollout is graded against two
criteria by the same fake model as judge. The worker runs with the production settings
(visibility timeout, staleness); `--fast` shortens them (for a quick look, not the figures).

Prints, for the run:
  jobs stranded        rollouts and grades not ended once no job has ended for 2 minutes
                       (after the last fault)
  max resume delay     the longest time from a worker's restart until a job the killed
                       worker was running was taken up again (or ended)
  recorded twice       tool results (one tool call answered twice), emails sent twice,
                       model steps saved twice (must all be 0)
  calls                served by the fake server vs in the usage log (each HTTP attempt;
                       a call cut off by a kill is logged as interrupted)
  grades failed        grades failed for good ("interrupted too many times" or otherwise)
"""

import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BATCH_SIZE = 48
RESUME_LIMIT = 120.0  # seconds: every job must be going again this long after a restart
DRAIN_LIMIT = 120.0  # seconds without any job ending after which the jobs left are stranded
DRAIN_CAP = 900.0  # seconds after the last fault: the bench ends by then whatever happens


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """The bench's own redis-server (never the machine's)."""

    def __init__(self, directory: Path) -> None:
        self.port, self.directory = _free_port(), directory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
             "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        client, deadline = redis.Redis.from_url(self.url), time.monotonic() + 20
        while True:
            try:
                if client.ping():
                    return
            except (redis.ConnectionError, redis.ResponseError):  # (refused, or still loading its data)
                pass
            if time.monotonic() > deadline:
                sys.exit("the bench's redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SHUTDOWN: the append-only file is flushed, the data kept
            self.process.wait(timeout=20)


class Worker:
    """One Celery worker process, started again with `restart()` after a kill."""

    def __init__(self, env: dict, log_dir: Path, threads: int) -> None:
        self.env, self.log_dir, self.threads = env, log_dir, threads
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        log = self.log_dir / f"worker-{self.starts}.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "default,rollouts,grading", "--pool", "threads",
             "-c", str(self.threads), "-l", "info", "--without-heartbeat", "--without-gossip", "--without-mingle",
             "-n", f"soak-{self.starts}@%h"],
            cwd=ROOT, env=self.env, stdout=log.open("w"), stderr=subprocess.STDOUT,
        )

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.log_dir.glob("worker-*.log")))


def agent_reply(request, latency: float):
    from tests.fake_llm import Reply

    messages = request.body.get("messages", [])
    if request.body.get("response_format"):  # the judge
        return Reply(structured={"explanation": "The answer states the price.", "criteria_met": True}, delay=latency / 2)
    called = [c["function"]["name"] for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
    user = next((m["content"] for m in messages if m.get("role") == "user"), "")
    if not called:
        return Reply(content="Looking.", tool_calls=[{"name": "list_files", "arguments": {"recursive": True}}], delay=latency)
    if "send_email" not in called:
        subject = f"Soak report {uuid.uuid4().hex[:8]}"  # one per call: an email sent twice has the same subject twice
        return Reply(content=None, delay=latency, tool_calls=[{"name": "send_email", "arguments": {
            "to": ["partner@example.com"], "subject": subject, "body": f"Working on: {user[:40]}"}}])
    if "read_file" not in called:
        return Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/Doc 1.md"}}], delay=latency)
    return Reply(content="The purchase price is $12m.", delay=latency)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=3, help=f"batches of {BATCH_SIZE} rollouts, all queued at the start")
    parser.add_argument("--fault-seconds", type=float, default=150, help="how long faults go on")
    parser.add_argument("--kills", type=int, default=6, help="SIGKILLs of the worker, at random times within the fault period")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model call")
    parser.add_argument("--threads", type=int, default=8, help="the worker's thread pool")
    parser.add_argument("--fast", action="store_true", help="short visibility timeout and staleness (not the production figures)")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    random.seed(args.seed)
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith("postgres"):
        sys.exit("The soak runs on PostgreSQL: set DATABASE_URL (the bench creates and drops a database of its own).")
    if shutil.which("redis-server") is None:
        sys.exit("The soak runs its own redis-server: install it (apt-get install redis-server).")

    var_dir = Path(tempfile.mkdtemp(prefix="tw-soak-"))
    redis_server = Redis(var_dir)
    redis_server.start()
    base = database_url.rsplit("/", 1)[0]
    soak_db = f"tw_soak_{uuid.uuid4().hex[:8]}"
    subprocess.run(["psql", f"{base}/postgres", "-qc", f"CREATE DATABASE {soak_db}"], check=True)
    os.environ |= {
        "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1", "TASKWRIGHT_VAR_DIR": str(var_dir),
        "DATABASE_URL": f"{base}/{soak_db}", "REDIS_URL": redis_server.url, "CELERY_BROKER_URL": redis_server.url,
        "CACHE_URL": redis_server.url, "LLM_SLOTS_REDIS_URL": redis_server.url, "MODEL_ALLOW_PRIVATE_NETWORKS": "1",
    }
    for name in ("CELERY_VISIBILITY_TIMEOUT", "JOB_STALE_SECONDS", "ROLLOUT_STALE_SECONDS"):
        os.environ.pop(name, None)
    if args.fast:
        os.environ |= {"CELERY_VISIBILITY_TIMEOUT": "20", "JOB_STALE_SECONDS": "10"}
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        _run(args, var_dir, redis_server)
    finally:
        from django.db import connections

        connections.close_all()
        redis_server.stop()
        subprocess.run(["psql", f"{base}/postgres", "-qc", f"DROP DATABASE IF EXISTS {soak_db} WITH (FORCE)"], check=False)
    print(f"logs: {var_dir}")


def _run(args, var_dir: Path, redis_server: Redis) -> None:
    from django.db.models import Count, Sum
    from django.utils import timezone

    from accounts.models import Membership, Project, User
    from authoring import services as authoring_services
    from llm.client import INTERRUPTED
    from llm.models import ModelCall, ModelEndpoint
    from rollouts import services
    from rollouts.models import Grade, GradeStatus, Rollout, RolloutStatus, Step, StepKind
    from tests.fake_llm import FakeLLMServer
    from workspace.models import OverlayEntry

    fake = FakeLLMServer(keep_alive=True).start()
    fake._server.handle_error = lambda request, address: None  # (a killed worker's connections reset: expected here)
    fake.responder = lambda request: agent_reply(request, args.latency)
    user = User.objects.create_user("soak", password=uuid.uuid4().hex)
    project = Project.objects.create(name="Soak", slug="soak")
    Membership.objects.create(project=project, user=user, role="author")
    world = authoring_services.world_create(project_id=project.pk, user=user, title="Soak world", outline="A deal.")
    for i in range(4):
        authoring_services.document_create(world=world, user=user, path=f"Deal/Doc {i}.md", content="The purchase price is $12m. " * 20)
    env_task = authoring_services.env_task_create(
        world=world, user=user, title="Find the price", prompt="Read the data room, report, and state the purchase price.",
        reference_answer="$12m",
    )
    for text in ("States the purchase price.", "Sends a report email."):
        rubric = env_task.rubric_versions.order_by("-number").first()
        authoring_services.criterion_add(env_task=env_task, user=user, base_revision=rubric.revision, text=text, points=5)
    endpoint = ModelEndpoint.objects.create(
        name="fake", kind="openai_compatible", base_url=fake.url, model="fake", max_concurrency=args.threads + 4,
        connect_timeout=5, read_timeout=30, max_retries=2,
    )

    worker = Worker(dict(os.environ), var_dir, args.threads)
    worker.start()
    batches = [services.rollout_batch_start(env_task=env_task, user=user, endpoint=endpoint, n=BATCH_SIZE)
               for _ in range(args.batches)]
    rollouts = Rollout.objects.filter(batch__in=batches)
    grades = Grade.objects.filter(rollout__batch__in=batches)
    total = args.batches * BATCH_SIZE

    def ended() -> tuple[int, int, int]:
        done = rollouts.filter(status__in=Rollout.FINISHED).count()
        completed = rollouts.filter(status=RolloutStatus.COMPLETED).count()
        graded = grades.exclude(status__in=(GradeStatus.QUEUED, GradeStatus.RUNNING)).count()
        return done, completed, graded

    # Faults: kills at random times, one Redis stop of ~1 s half-way.
    started = time.monotonic()
    fault_times = sorted(random.uniform(5, args.fault_seconds) for _ in range(args.kills))
    redis_at = args.fault_seconds / 2
    resumes: list[float] = []
    watchers: list[threading.Thread] = []
    faults = [("kill", t) for t in fault_times] + [("redis", redis_at)]
    faults.sort(key=lambda fault: fault[1])
    for kind, at in faults:
        time.sleep(max(0.0, started + at - time.monotonic()))
        if kind == "redis":
            redis_server.stop()
            time.sleep(1.0)
            redis_server.start()
            print(f"[{time.monotonic() - started:6.1f}s] Redis stopped for ~1 s", flush=True)
            continue
        running_rollouts = dict(rollouts.filter(status=RolloutStatus.RUNNING).values_list("pk", "attempts"))
        running_grades = dict(grades.filter(status=GradeStatus.RUNNING).values_list("pk", "started_at"))
        worker.kill()
        worker.start()  # at once, as a supervisor does
        restarted = time.monotonic()
        print(f"[{restarted - started:6.1f}s] worker killed and restarted: {len(running_rollouts)} rollouts and "
              f"{len(running_grades)} grades were running", flush=True)
        watcher = threading.Thread(target=_watch_resume, args=(running_rollouts, running_grades, restarted, resumes), daemon=True)
        watcher.start()
        watchers.append(watcher)
    last_fault = time.monotonic()
    print(f"[{last_fault - started:6.1f}s] faults over; waiting for every job to end", flush=True)
    # Until every job has ended, or none has for DRAIN_LIMIT (what is left then is stranded:
    # a queue that is merely long keeps ending jobs).
    progress, last_progress = None, time.monotonic()
    while time.monotonic() - last_progress < DRAIN_LIMIT and time.monotonic() - last_fault < DRAIN_CAP:
        done, completed, graded = ended()
        if done == total and graded == completed:
            break
        if (done, graded) != progress:
            progress, last_progress = (done, graded), time.monotonic()
        time.sleep(1)
    drained_after = time.monotonic() - last_fault
    for watcher in watchers:
        watcher.join(timeout=1)
    stranded_rollouts = total - ended()[0]
    stranded_grades = grades.filter(status__in=(GradeStatus.QUEUED, GradeStatus.RUNNING)).count()
    completed_without_grade = rollouts.filter(status=RolloutStatus.COMPLETED).exclude(grades__isnull=False).count()
    worker.stop()
    fake_requests = len(fake.requests)
    fake.stop()

    twice_results = sum(_answered_twice(rollout) for rollout in rollouts)
    finals = Step.objects.filter(rollout__in=rollouts, kind=StepKind.MODEL, tool_calls=[]).values("rollout_id").annotate(n=Count("id"))
    twice_finals = finals.filter(n__gt=1).count()
    emails = (OverlayEntry.objects.filter(overlay__rollouts__in=rollouts, kind="email").values("overlay_id", "metadata__subject")
              .annotate(n=Count("id")).filter(n__gt=1).count())
    emails_per_rollout = (OverlayEntry.objects.filter(overlay__rollouts__in=rollouts, kind="email").values("overlay_id")
                          .annotate(n=Count("id")).filter(n__gt=1).count())
    gaps = sum(1 for r in rollouts if list(r.steps.values_list("index", flat=True).order_by("index")) != list(range(r.steps.count())))
    logged = ModelCall.objects.aggregate(n=Sum("attempts"))["n"] or 0
    interrupted_calls = ModelCall.objects.filter(error=INTERRUPTED).aggregate(n=Sum("attempts"))["n"] or 0
    statuses = dict(rollouts.order_by().values_list("status").annotate(n=Count("id")))
    grade_statuses = dict(grades.order_by().values_list("status").annotate(n=Count("id")))
    failed_grades = list(grades.filter(status=GradeStatus.FAILED).values_list("error", flat=True))
    interrupted = sum(1 for error in failed_grades if "interrupted" in error)
    log = worker.logs()

    print()
    print(f"soak: {total} rollouts ({args.batches} × {BATCH_SIZE}) with grading, {args.kills} SIGKILLs + restart, "
          f"1 Redis stop of ~1 s, over {args.fault_seconds:.0f} s; worker threads {args.threads}; model latency {args.latency}s; "
          f"{'fast timings' if args.fast else 'production timings'}; {timezone.now():%Y-%m-%d %H:%M} UTC")
    print(f"rollouts: {statuses}  grades: {grade_statuses}  "
          + (f"all ended {drained_after:.0f} s after the last fault" if not stranded_rollouts + stranded_grades
             else f"stopped waiting {drained_after:.0f} s after the last fault"))
    print(f"jobs stranded: {stranded_rollouts + stranded_grades} ({stranded_rollouts} rollouts, {stranded_grades} grades; "
          f"completed rollouts never queued for grading: {completed_without_grade})")
    print(f"max resume delay after restart: {max(resumes, default=0):.1f} s over {len(resumes)} interrupted jobs "
          f"(limit {RESUME_LIMIT:.0f} s)")
    print(f"recorded twice: tool results {twice_results}, emails sent {emails} (rollouts with more than one email: "
          f"{emails_per_rollout}), final answers {twice_finals}; rollouts with a gap in their steps: {gaps}")
    print(f"calls served by the fake server: {fake_requests}  in the usage log: {logged}  "
          f"(of which cut off in flight by a kill, logged as interrupted: {interrupted_calls})")
    print(f"grades failed for good: {len(failed_grades)} ({interrupted} 'interrupted too many times')")
    print(f"worker 'Unrecoverable error' lines: {log.count('Unrecoverable error')}  broker connection errors it lived through: "
          f"{log.count('Connection to broker lost') + log.count('consumer: Cannot connect')}")


def _answered_twice(rollout) -> int:
    """Tool results of this rollout that answer a call already answered, or no call of the
    model step before them."""
    from rollouts.models import StepKind

    twice, asked = 0, set()
    for kind, tool_calls, call_id in rollout.steps.order_by("index").values_list("kind", "tool_calls", "tool_call_id"):
        if kind == StepKind.MODEL:
            asked = {c["id"] for c in tool_calls}
        elif call_id in asked:
            asked.discard(call_id)
        else:
            twice += 1
    return twice


def _watch_resume(rollout_attempts: dict, grade_starts: dict, restarted: float, resumes: list, timeout: float = RESUME_LIMIT + 60) -> None:
    """How long after `restarted` each job the killed worker was running is taken up again:
    re-claimed (a rollout's attempts grow, a grade gets a later started_at) or ended."""
    from django.db import connection

    from rollouts.models import Grade, GradeStatus, Rollout, RolloutStatus

    waiting_r, waiting_g = dict(rollout_attempts), dict(grade_starts)
    deadline = time.monotonic() + timeout
    try:
        while (waiting_r or waiting_g) and time.monotonic() < deadline:
            for pk, status, attempts in Rollout.objects.filter(pk__in=list(waiting_r)).values_list("pk", "status", "attempts"):
                if status != RolloutStatus.RUNNING or attempts > waiting_r[pk]:
                    resumes.append(time.monotonic() - restarted)
                    del waiting_r[pk]
            for pk, status, started_at in Grade.objects.filter(pk__in=list(waiting_g)).values_list("pk", "status", "started_at"):
                if status != GradeStatus.RUNNING or (started_at and waiting_g[pk] and started_at > waiting_g[pk]):
                    resumes.append(time.monotonic() - restarted)
                    del waiting_g[pk]
            time.sleep(0.5)
        resumes.extend([timeout] * (len(waiting_r) + len(waiting_g)))  # never resumed within the watch
    finally:
        connection.close()


if __name__ == "__main__":
    main()
