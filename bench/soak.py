"""Soak: 200 trial rollouts of 10 model steps with tool writes, graded, on a real worker,
while the worker is SIGKILLed 20 times (and started again at once, as a supervisor does),
Redis is restarted once and PostgreSQL is restarted once; then what survived.

    .venv/bin/python bench/soak.py [--rollouts 200] [--kills 20] [--threads 8] [--seed N]

Runs its OWN PostgreSQL cluster (initdb + pg_ctl from /usr/lib/postgresql/*/bin, as the
`postgres` user when run as root, trust auth, a temporary directory, a free loopback port)
and its OWN redis-server (a free port, append-only file on, so a restart keeps its data as a
production Redis does), and removes both at the end: the machine's PostgreSQL and Redis are
never touched. The fake OpenAI-compatible model server (tests.fake_llm) runs in this
process, answering each call after 0.05-0.2 s: the run takes 5-8 minutes on 2 cores.

Each rollout: ten model steps; nine call a tool (reads, `write_file` twice, `send_email`
three times, each email with its step in the subject), the tenth answers. Each finished
rollout is graded against two criteria by the same fake model as judge. The worker runs
with the production settings (visibility timeout, staleness, heartbeats).

Prints:
  lost: L, duplicated: D, stuck: S
      lost        rollouts that did not complete and grades that were not graded (failed for
                  good, or never ended by the end of the run; a completed rollout with no
                  grade counts)
      duplicated  tool writes done twice (an email sent twice, a tool call answered twice)
                  and model calls beyond the ones in flight at a kill (calls made and not yet
                  saved when the worker was killed are asked again on resume: expected)
      stuck       rollouts and grades not ended 2 minutes after the last fault
  usage log calls / calls served: X      (each HTTP attempt; 1.0 is every call logged once)
and the details behind each figure.
"""

import argparse
import glob
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BATCH_SIZE = 50  # (a batch holds at most 64)
STUCK_AFTER = 120.0  # seconds after the last fault: a job not ended by then is stuck
LOST_AFTER = 240.0  # seconds after the last fault: a job not ended by then never finished
MIN_GAP = 4.0  # seconds at least between two faults
STEPS = 10
EMAIL_STEPS = (2, 5, 8)  # the model steps (1-based) that send an email


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """The bench's own PostgreSQL cluster (never the machine's)."""

    def __init__(self, directory: Path) -> None:
        versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
        if not versions:
            sys.exit("The soak runs its own PostgreSQL: install it (apt-get install postgresql).")
        self.bin = Path(versions[-1])
        self.port, self.directory = _free_port(), directory
        self.data = directory / "data"
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/taskwright"

    def _run(self, *command: str) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []  # (initdb refuses root)
        subprocess.run([*as_postgres, *command], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def init(self) -> None:
        self.directory.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.directory / "server.log"), "-o", options, "-w", "start")
        subprocess.run(["psql", f"postgres://postgres@127.0.0.1:{self.port}/postgres", "-qc", "CREATE DATABASE taskwright"], check=True)

    def restart(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "restart")

    def remove(self) -> None:
        if self.data.exists():
            subprocess.run(["runuser", "-u", "postgres", "--"] * (os.geteuid() == 0)
                           + [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"],
                           check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.directory, ignore_errors=True)


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
    """One Celery worker process, started again after a kill."""

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


def is_judge(request) -> bool:
    return bool(request.body.get("response_format"))


def agent_reply(request):
    """The scripted agent: the n-th model step of a rollout (counted from the conversation)."""
    from tests.fake_llm import Reply

    latency = random.uniform(0.05, 0.2)
    if is_judge(request):
        return Reply(structured={"explanation": "The answer states the price.", "criteria_met": True}, delay=latency)
    step = 1 + sum(1 for m in request.body.get("messages", []) if m.get("role") == "assistant")
    if step in EMAIL_STEPS:
        call = {"name": "send_email", "arguments": {"to": ["partner@example.com"], "subject": f"Soak report, step {step}",
                                                    "body": "Working on the price."}}
    elif step in (4, 7):
        call = {"name": "write_file", "arguments": {"path": f"Out/notes-{step}.md", "content": f"# Notes at step {step}\n\n$12m."}}
    elif step < STEPS:
        call = {"name": ("list_files", "read_file", "search_files")[step % 3], "arguments": {}}
        call["arguments"] = {"recursive": True} if call["name"] == "list_files" else (
            {"path": "Deal/Doc 1.md"} if call["name"] == "read_file" else {"query": "price"})
    else:
        return Reply(content="The purchase price is $12m.", delay=latency)
    return Reply(content=None, tool_calls=[call], delay=latency)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs of the worker, each once a random share of the jobs has ended")
    parser.add_argument("--threads", type=int, default=8, help="the worker's thread pool")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    random.seed(args.seed)
    if shutil.which("redis-server") is None:
        sys.exit("The soak runs its own redis-server: install it (apt-get install redis-server).")

    var_dir = Path(tempfile.mkdtemp(prefix="tw-soak-"))
    var_dir.chmod(0o755)  # (the postgres user reaches its own directory inside)
    postgres, redis_server = Postgres(var_dir / "pg"), Redis(var_dir)
    try:
        postgres.init()
        redis_server.start()
        os.environ |= {
            "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1", "TASKWRIGHT_VAR_DIR": str(var_dir),
            "DATABASE_URL": postgres.url, "REDIS_URL": redis_server.url, "CELERY_BROKER_URL": redis_server.url,
            "CACHE_URL": redis_server.url, "LLM_SLOTS_REDIS_URL": redis_server.url, "MODEL_ALLOW_PRIVATE_NETWORKS": "1",
        }
        for name in ("CELERY_VISIBILITY_TIMEOUT", "JOB_STALE_SECONDS", "ROLLOUT_STALE_SECONDS", "BROKER_WATCH_SECONDS"):
            os.environ.pop(name, None)  # the production timings
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        _run(args, var_dir, postgres, redis_server)
    finally:
        from django.db import connections

        connections.close_all()
        redis_server.stop()
        postgres.remove()
    print(f"logs: {var_dir}")


def _db(read):
    """`read()`, again after a reconnect if the database restarted under it."""
    from django.db import DatabaseError, connections

    for _ in range(30):
        try:
            return read()
        except DatabaseError:
            connections.close_all()
            time.sleep(1)
    return read()


def _run(args, var_dir: Path, postgres: Postgres, redis_server: Redis) -> None:
    from django.db.models import Count, Sum
    from django.utils import timezone

    from accounts.models import Membership, Project, User
    from authoring import services as authoring_services
    from llm.models import ModelCall, ModelEndpoint
    from rollouts import services
    from rollouts.models import Grade, GradeStatus, Rollout, RolloutStatus, Step, StepKind, Verdict
    from tests.fake_llm import FakeLLMServer
    from workspace.models import OverlayEntry

    fake = FakeLLMServer(keep_alive=True).start()
    fake._server.handle_error = lambda request, address: None  # (a killed worker's connections reset: expected here)
    fake.responder = agent_reply
    user = User.objects.create_user("soak", password="soak-" + os.urandom(8).hex())
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
    sizes = [BATCH_SIZE] * (args.rollouts // BATCH_SIZE) + ([args.rollouts % BATCH_SIZE] if args.rollouts % BATCH_SIZE else [])
    batches = [services.rollout_batch_start(env_task=env_task, user=user, endpoint=endpoint, n=n, max_steps=STEPS) for n in sizes]
    rollouts = Rollout.objects.filter(batch__in=batches)
    grades = Grade.objects.filter(rollout__batch__in=batches)
    agent_calls = lambda: sum(1 for r in list(fake.requests) if not is_judge(r))  # noqa: E731
    judge_calls = lambda: len(fake.requests) - agent_calls()  # noqa: E731

    def unsaved_calls() -> int:
        """Calls served and not (yet) saved as a model step or a verdict: with the worker just
        killed, the ones the dead worker had in flight (asked again on resume)."""
        served_agent, served_judge = agent_calls(), judge_calls()
        saved = _db(lambda: (Step.objects.filter(rollout__in=rollouts, kind=StepKind.MODEL).count(),
                             Verdict.objects.filter(grade__in=grades).count()))
        return max(0, served_agent - saved[0]) + max(0, served_judge - saved[1])

    def grades_not_created() -> int:
        """Grades still to come: rollouts not yet completed (each completed one is graded)."""
        return rollouts.exclude(status=RolloutStatus.COMPLETED).count()

    def not_ended() -> tuple[int, int]:
        return _db(lambda: (rollouts.exclude(status__in=Rollout.FINISHED).count(),
                            grades.filter(status__in=(GradeStatus.QUEUED, GradeStatus.RUNNING)).count()
                            + rollouts.filter(status=RolloutStatus.COMPLETED).exclude(grades__isnull=False).count()))

    # Faults while the work runs, whatever the machine's speed: each at a share of the jobs
    # (rollouts and grades) ended, at random for the kills, a third and two thirds for the
    # restarts; at least MIN_GAP s apart (a worker just started gets to take work).
    jobs = 2 * len(rollouts)
    faults = [("kill", random.uniform(0.02, 0.95)) for _ in range(args.kills)] + [("redis", 1 / 3), ("postgres", 2 / 3)]
    faults.sort(key=lambda fault: fault[1])
    started = previous = time.monotonic()
    in_flight_at_kills, running_at_kills = 0, 0
    for kind, share in faults:
        time.sleep(max(0.0, previous + MIN_GAP - time.monotonic()))
        waited_from = time.monotonic()
        while jobs - sum(not_ended()) - _db(lambda: grades_not_created()) < share * jobs and time.monotonic() - waited_from < 180:
            time.sleep(0.2)
        previous = time.monotonic()
        clock = f"[{previous - started:6.1f}s, {share:4.0%}]"
        if kind == "redis":
            redis_server.stop()
            redis_server.start()
            print(f"{clock} Redis restarted", flush=True)
        elif kind == "postgres":
            postgres.restart()
            print(f"{clock} PostgreSQL restarted", flush=True)
        else:
            worker.kill()
            unsaved = unsaved_calls()
            running = _db(lambda: rollouts.filter(status=RolloutStatus.RUNNING).count() + grades.filter(status=GradeStatus.RUNNING).count())
            in_flight_at_kills = unsaved  # (cumulative: a call cut off by an earlier kill stays unsaved)
            running_at_kills += running
            worker.start()  # at once, as a supervisor does
            print(f"{clock} worker killed and restarted: {running} jobs running, {unsaved} calls in flight", flush=True)
    last_fault = time.monotonic()
    print(f"[{last_fault - started:6.1f}s] faults over; waiting for every job to end", flush=True)

    stuck, ended_after = None, None
    while time.monotonic() - last_fault < LOST_AFTER:
        left = sum(not_ended())
        if stuck is None and time.monotonic() - last_fault >= STUCK_AFTER:
            stuck = left
        if not left:
            ended_after = time.monotonic() - last_fault
            break
        time.sleep(1)
    if stuck is None:
        stuck = 0 if ended_after is not None else sum(not_ended())
    worker.stop()
    served = len(fake.requests)
    served_agent, served_judge = agent_calls(), judge_calls()
    fake.stop()

    statuses = dict(rollouts.order_by().values_list("status").annotate(n=Count("id")))
    grade_statuses = dict(grades.order_by().values_list("status").annotate(n=Count("id")))
    lost_rollouts = rollouts.exclude(status=RolloutStatus.COMPLETED).count()
    lost_grades = grades.exclude(status=GradeStatus.GRADED).count() + rollouts.filter(
        status=RolloutStatus.COMPLETED).exclude(grades__isnull=False).count()
    reasons = dict(rollouts.exclude(status=RolloutStatus.COMPLETED).order_by().values_list("reason").annotate(n=Count("id")))
    reasons |= dict(grades.exclude(status=GradeStatus.GRADED).order_by().values_list("error").annotate(n=Count("id")))

    emails = OverlayEntry.objects.filter(overlay__rollouts__in=rollouts, kind="email")
    emails_twice = sum(n - 1 for n in emails.values("overlay_id", "metadata__subject").annotate(n=Count("id")).values_list("n", flat=True))
    complete_emails = all(n == len(EMAIL_STEPS) for n in emails.filter(overlay__rollouts__status=RolloutStatus.COMPLETED)
                          .values("overlay_id").annotate(n=Count("id")).values_list("n", flat=True))
    results_twice = sum(_answered_twice(rollout) for rollout in rollouts)
    model_steps = Step.objects.filter(rollout__in=rollouts, kind=StepKind.MODEL).count()
    verdicts = Verdict.objects.filter(grade__in=grades).count()
    repeated_calls = (served_agent - model_steps) + (served_judge - verdicts)
    calls_twice = max(0, repeated_calls - in_flight_at_kills)
    lost, duplicated = lost_rollouts + lost_grades, emails_twice + results_twice + calls_twice
    logged = ModelCall.objects.aggregate(n=Sum("attempts"))["n"] or 0
    log = worker.logs()

    print()
    print(f"soak: {rollouts.count()} rollouts of {STEPS} model steps ({len(EMAIL_STEPS)} emails and 2 file writes each), graded; "
          f"{args.kills} SIGKILLs + restart, 1 Redis restart, 1 PostgreSQL restart, while it ran; worker threads "
          f"{args.threads}; model latency 0.05-0.2 s; production timings; seed {args.seed}; {timezone.now():%Y-%m-%d %H:%M} UTC")
    print(f"rollouts: {statuses}  grades: {grade_statuses}  "
          + (f"all ended {ended_after:.0f} s after the last fault" if ended_after is not None
             else f"not all ended {LOST_AFTER:.0f} s after the last fault"))
    print(f"lost: {lost}, duplicated: {duplicated}, stuck: {stuck}")
    print(f"usage log calls / calls served: {logged / served if served else 0:.3f} ({logged} / {served})")
    print(f"  lost: {lost_rollouts} rollouts, {lost_grades} grades; reasons: {reasons or '-'}")
    print(f"  duplicated: emails sent twice {emails_twice}, tool calls answered twice {results_twice}, model calls beyond those in "
          f"flight at a kill {calls_twice} (calls asked again: {repeated_calls}; in flight at the kills: {in_flight_at_kills}); "
          f"every completed rollout sent its {len(EMAIL_STEPS)} emails: {complete_emails}")
    print(f"  jobs running at the kills: {running_at_kills}; worker 'Unrecoverable error' lines: {log.count('Unrecoverable error')}; "
          f"wall time {time.monotonic() - started:.0f} s")


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


if __name__ == "__main__":
    main()
