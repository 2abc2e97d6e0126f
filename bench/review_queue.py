"""Benchmark: the reviewer's pages do the same work at 10 and at 10,000 submissions.

Builds a project whose review queue holds N waiting submissions (each with a 10 KB snapshot,
as a real world's would be larger still), then loads, as a reviewer signed in through Django's
test client (no network; DEBUG off), the review queue, the dashboard and the reviewer
dashboard, interleaved, and prints the median and p90 time and the query count per page for
each N, and the ratio of the largest N's median to the smallest's (goal: about 1).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/review_queue.py [--sizes 10,1000,10000]

Uses a fresh database it creates and drops (PostgreSQL), or a temporary SQLite file.
"""

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SNAPSHOT = {"task": {"title": "t"}, "world": {"documents": [{"path": f"Doc {i}.md", "content": "x" * 2000} for i in range(5)]}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "0"
    os.environ["SECRET_KEY"] = secrets.token_urlsafe(64)
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ["SECURE_SSL_REDIRECT"] = "0"  # the test client speaks plain http
    os.environ["CELERY_BROKER_URL"] = "memory://localhost/"
    var_dir = Path(tempfile.mkdtemp(prefix="tw-bench-queue-"))
    os.environ["TASKWRIGHT_VAR_DIR"] = str(var_dir)
    database_url = os.environ.get("DATABASE_URL", "")
    bench_db = f"tw_bench_{uuid.uuid4().hex[:8]}"
    base = database_url.rsplit("/", 1)[0]
    if database_url.startswith("postgres"):
        subprocess.run(["psql", f"{base}/postgres", "-qc", f"CREATE DATABASE {bench_db}"], check=True)
        os.environ["DATABASE_URL"] = f"{base}/{bench_db}"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    try:
        call_command("migrate", verbosity=0)
        from accounts.models import Membership, Project, Role, User
        from reviews.models import Submission
        from reviews.services import submission_create
        from tests import factories

        project = Project.objects.create(name="Bench", slug="bench")
        author = User.objects.create_user("bench-author", password=uuid.uuid4().hex)
        reviewer = User.objects.create_user("bench-reviewer", password=uuid.uuid4().hex)
        Membership.objects.create(project=project, user=author, role=Role.AUTHOR)
        Membership.objects.create(project=project, user=reviewer, role=Role.REVIEWER)
        first = submission_create(env_task=factories.env_task(factories.world(project, author, documents=0), author), user=author)
        client = Client()
        client.force_login(reviewer)
        pages = {"review queue": "/reviews/", "dashboard": "/", "reviewer dashboard": "/reviews/stats/"}
        results: dict[tuple[str, int], tuple[list[float], int]] = {}
        for size in sizes:
            have = Submission.objects.count()
            Submission.objects.bulk_create(
                [Submission(project=project, env_task_id=first.env_task_id, number=n + 1, title=f"Queued {n:05d}",
                            rubric_version_id=first.rubric_version_id, snapshot=SNAPSHOT, submitted_by=author)
                 for n in range(have, size)], batch_size=1000)
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
            for url in pages.values():
                client.get(url)  # warm
            timings: dict[str, list[float]] = {name: [] for name in pages}
            counts = {}
            for _ in range(args.rounds):
                for name, url in pages.items():  # interleaved
                    with CaptureQueriesContext(connection) as captured:
                        start = time.perf_counter()
                        response = client.get(url)
                        timings[name].append((time.perf_counter() - start) * 1000)
                    assert response.status_code == 200, (url, response.status_code)
                    counts[name] = len(captured)
            for name in pages:
                results[(name, size)] = (timings[name], counts[name])
                t = sorted(timings[name])
                print(f"{name:>18} at {size:>6}: median {statistics.median(t):6.1f} ms, p90 {t[int(0.9 * (len(t) - 1))]:6.1f} ms, "
                      f"{counts[name]} queries", flush=True)
        for name in pages:
            small, large = results[(name, sizes[0])], results[(name, sizes[-1])]
            print(f"{name} median {sizes[-1]}/{sizes[0]}: {statistics.median(large[0]) / statistics.median(small[0]):.2f} "
                  f"(queries {small[1]} → {large[1]})")
    finally:
        connection.close()
        if database_url.startswith("postgres"):
            subprocess.run(["psql", f"{base}/postgres", "-qc", f"DROP DATABASE IF EXISTS {bench_db}"], check=False)


if __name__ == "__main__":
    main()
