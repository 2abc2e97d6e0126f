"""Benchmark: 50 people browsing the key pages at once, on PostgreSQL with 10,000 tasks.

Builds a fresh PostgreSQL database with the demo (`seed_demo`: its project, world, task and
a finished batch of trial rollouts on the scripted model), 10,000 more tasks in the demo
project and 200 submissions waiting in the review queue, starts gunicorn with 2 workers on
127.0.0.1 (DEBUG off), and runs 50 simulated users (threads, each its own connection and
signed-in session: a third as the demo author, a third as the reviewer, a third as the
admin). Each user opens the six key pages in turn, from a different starting page, with
1–3 s of thinking between two pages (as locust's `between(1, 3)`):

    dashboard       /
    project         /projects/<demo>/       (every other time a random page of its 200 pages of tasks)
    task            /tasks/<demo task>/
    batch           /batches/<demo batch>/
    trajectory      /rollouts/<first rollout of it>/
    review queue    /reviews/

Users start over `--ramp` seconds; requests are counted from then on, for `--seconds`.
Prints p50/p95/p99 per page and overall, the errors (any answer but 200, or no answer) and
requests per second. Goal: p95 < 300 ms and 0 errors.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/9 \
        .venv/bin/python bench/load.py [--users 50] [--seconds 60]

Bounded: users × seconds / 2 requests or so, to loopback only; drops its database at the end.
"""

import argparse
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import (
    Client,
    Gunicorn,
    add_tasks,
    cpu_seconds,
    database_backends,
    drop_database,
    percentile,
    session_cookie,
    setup_django,
)

SNAPSHOT = {"task": {"title": "t"}, "world": {"documents": [{"path": f"Doc {i}.md", "content": "x" * 2000} for i in range(5)]}}
PAGES = ("dashboard", "project", "task", "batch", "trajectory", "review queue")


def _build(tasks: int, queued: int) -> tuple[dict[str, str], list]:
    """The demo plus `tasks` tasks and `queued` waiting submissions: (page urls, users)."""
    from django.core.management import call_command
    from django.db.models import Max

    from accounts.models import User
    from authoring.models import EnvTask
    from reviews.models import Submission
    from rollouts.models import RolloutBatch

    call_command("seed_demo", verbosity=0)
    author, reviewer, admin = (User.objects.get(username=f"demo-{role}") for role in ("author", "reviewer", "admin"))
    env_task = EnvTask.objects.select_related("project", "world").get()
    batch = RolloutBatch.objects.filter(env_task=env_task).first()
    rollout = batch.rollouts.order_by("index").first()
    rubric = env_task.rubric_versions.order_by("-number").first()
    have = Submission.objects.filter(env_task=env_task).aggregate(n=Max("number"))["n"] or 0
    Submission.objects.bulk_create(
        [Submission(project=env_task.project, env_task=env_task, number=have + n + 1, title=f"Queued {n:05d}",
                    rubric_version=rubric, snapshot=SNAPSHOT, submitted_by=author) for n in range(queued)], batch_size=500)
    add_tasks(env_task.project, env_task.world, author, tasks)  # ends with VACUUM ANALYZE
    urls = {
        "dashboard": "/", "project": f"/projects/{env_task.project_id}/", "task": f"/tasks/{env_task.pk}/",
        "batch": f"/batches/{batch.pk}/", "trajectory": f"/rollouts/{rollout.pk}/", "review queue": "/reviews/",
    }
    return urls, [author, reviewer, admin]


class User(threading.Thread):
    def __init__(self, number: int, port: int, cookie: str, urls: dict[str, str], start_at: float, count_from: float,
                 stop_at: float, pages: int) -> None:
        super().__init__(daemon=True)
        self.number, self.port, self.cookie, self.urls = number, port, cookie, urls
        self.start_at, self.count_from, self.stop_at, self.pages = start_at, count_from, stop_at, pages
        self.random = random.Random(number)
        self.results: list[tuple[str, float, bool]] = []  # (page, ms, ok)

    def run(self) -> None:
        time.sleep(max(0.0, self.start_at - time.monotonic()))
        client = Client(self.port, {"Cookie": self.cookie, "Accept": "text/html"})
        step = self.number
        while time.monotonic() < self.stop_at:
            page = PAGES[step % len(PAGES)]
            step += 1
            url = self.urls[page]
            if page == "project" and step % 2:
                url += f"?page={self.random.randint(1, self.pages)}"
            started = time.monotonic()
            try:
                status, _, ms = client.get(url)
                ok = status == 200
            except OSError:
                ms, ok = (time.monotonic() - started) * 1000, False
            if started >= self.count_from:
                self.results.append((page, ms, ok))
            time.sleep(self.random.uniform(1, 3))
        client.close()


def _queries_per_page(urls: dict[str, str], people: list) -> None:
    """Each page's SQL queries and time, in this process (Django's test client), per role:
    what to look at first when a page is slow."""
    from django.db import connection
    from django.test import Client as TestClient
    from django.test.utils import CaptureQueriesContext

    for person in people:
        client = TestClient(HTTP_HOST="127.0.0.1")
        client.force_login(person)
        cells = []
        for page, path in urls.items():
            client.get(path)
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                client.get(path)
                cells.append(f"{page} {len(captured)} q {1000 * (time.perf_counter() - started):.0f} ms")
        print(f"{person.username:>14}: " + ", ".join(cells), flush=True)


def _line(name: str, rows: list[tuple[str, float, bool]]) -> str:
    times = [ms for _, ms, _ in rows]
    errors = sum(not ok for _, _, ok in rows)
    return (f"{name:>13}: p50 {statistics.median(times):6.0f} ms, p95 {percentile(times, 95):6.0f} ms, "
            f"p99 {percentile(times, 99):6.0f} ms, {len(rows):5d} requests, {errors} errors")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--ramp", type=float, default=10)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--queued", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    url, name = setup_django("tw_bench_load")
    server = None
    try:
        started = time.monotonic()
        urls, people = _build(args.tasks, args.queued)
        cookies = [session_cookie(person) for person in people]
        print(f"demo + {args.tasks} tasks + {args.queued} queued submissions built in {time.monotonic() - started:.1f} s", flush=True)
        _queries_per_page(urls, people)
        server = Gunicorn(workers=args.workers)
        for cookie in cookies:  # every page answers every role, and both workers have imported every view
            client = Client(server.port, {"Cookie": cookie})
            for page, path in urls.items():
                for _ in range(2):
                    status, body, _ = client.get(path)
                    if status != 200:
                        sys.exit(f"{page} ({path}) answered {status}:\n{body[:300]!r}")
            client.close()

        now = time.monotonic()
        count_from, stop_at = now + args.ramp, now + args.ramp + args.seconds
        pages = (args.tasks + 1) // 50 + 1
        users = [User(n, server.port, cookies[n % 3], urls, now + n * args.ramp / args.users, count_from, stop_at, pages)
                 for n in range(args.users)]
        for user in users:
            user.start()
        time.sleep(max(0.0, count_from - time.monotonic()))
        workers, backends = server.worker_pids(), database_backends(name)
        cpu_before = cpu_seconds(workers), cpu_seconds(backends)
        load_before = os.getloadavg()[0]
        for user in users:
            user.join(timeout=args.ramp + args.seconds + 120)
        new_backends = [pid for pid in database_backends(name) if pid not in backends]
        web_cpu = cpu_seconds(workers) - cpu_before[0]
        db_cpu = cpu_seconds(backends) - cpu_before[1] + cpu_seconds(new_backends)
        rows = [row for user in users for row in user.results]
        for page in PAGES:
            print(_line(page, [row for row in rows if row[0] == page]))
        times = [ms for _, ms, _ in rows]
        errors = sum(not ok for _, _, ok in rows)
        print(f"load p50/p95/p99: {statistics.median(times):.0f}/{percentile(times, 95):.0f}/{percentile(times, 99):.0f} ms, "
              f"errors: {errors} of {len(rows)} requests, {len(rows) / args.seconds:.1f} requests/s, {args.users} users "
              f"(goal: p95 < 300 ms, 0 errors)")
        # What a page costs whatever else the machine runs: the web workers' and PostgreSQL's
        # CPU per request, and the machine's load (2 cores: above 2, everything waits its turn).
        print(f"CPU per request: web {1000 * web_cpu / len(rows):.0f} ms, PostgreSQL {1000 * db_cpu / len(rows):.1f} ms; "
              f"load average {load_before:.1f} → {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    finally:
        if server is not None:
            server.stop()
        drop_database(url, name)


if __name__ == "__main__":
    main()
