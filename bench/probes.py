"""Benchmark: do the reward-hacking probes and the ranking check catch weak rubrics, and leave
strong ones alone? Runs the planted set of tests/grading/planted (six professional tasks, each
with a strong and a weak rubric and six labelled answers including hacks) through the real
services, in this process, against the fake model server answering as a scripted judge.

For each task and rubric: a trial batch of the labelled answers, graded; the expert's ranking
as the labels give it; the built-in probe suite (no cheat model), graded. A rubric is flagged
when a probe is flagged or the ranking check warns.

    last line:  weak rubrics flagged: A/B; strong flagged: C/D      (goal: B/B and 0/D)

Uses the database the environment names (PostgreSQL: `DATABASE_URL=postgres://…`), in a fresh
database it creates and drops; without one a temporary SQLite file. The jobs the services
queue are run here one after the other (the broker is kombu's in-memory one: the messages
they send go nowhere). The set is written by the same hand as the probes: an optimistic
measure (see tests/grading/planted/__init__.py).

    .venv/bin/python bench/probes.py [-v]      # -v: one line per rubric, with what flagged it
"""

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per rubric: its scores and what flagged it")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    os.environ["MODEL_ALLOW_PRIVATE_NETWORKS"] = "1"  # the fake model server is on 127.0.0.1
    os.environ["CELERY_BROKER_URL"] = "memory://localhost/"
    var_dir = Path(tempfile.mkdtemp(prefix="tw-bench-probes-"))
    os.environ["TASKWRIGHT_VAR_DIR"] = str(var_dir)
    os.environ.pop("REDIS_URL", None)
    database_url = os.environ.get("DATABASE_URL", "")
    bench_db = f"tw_bench_{uuid.uuid4().hex[:8]}"
    if database_url.startswith("postgres"):
        base = database_url.rsplit("/", 1)[0]
        subprocess.run(["psql", f"{base}/postgres", "-qc", f"CREATE DATABASE {bench_db}"], check=True)
        os.environ["DATABASE_URL"] = f"{base}/{bench_db}"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    import django

    django.setup()
    from django.core.management import call_command

    server = None
    try:
        call_command("migrate", verbosity=0)
        from accounts.models import Membership, Project, Role, User
        from authoring import services as authoring_services
        from llm.models import ModelEndpoint
        from tests.fake_llm import FakeLLMServer
        from tests.grading.planted.judge import ScriptedJudge
        from tests.grading.planted.run import evaluate_set, summary
        from tests.grading.planted.tasks import TASKS

        judge = ScriptedJudge(TASKS)
        server = FakeLLMServer().start()
        server.responder = judge.responder
        author = User.objects.create_user("bench-author", password=uuid.uuid4().hex)
        project = Project.objects.create(name="Planted set", slug=f"planted-{uuid.uuid4().hex[:6]}")
        Membership.objects.create(project=project, user=author, role=Role.AUTHOR)
        world = authoring_services.world_create(project_id=project.pk, user=author, title="Planted set", outline="Six professional tasks.")
        endpoint = ModelEndpoint.objects.create(name="scripted judge", kind="openai_compatible", base_url=server.url, model="planted",
                                                api_key_env="", max_concurrency=4, connect_timeout=2, read_timeout=10, max_retries=1)
        outcomes = evaluate_set(TASKS, world=world, author=author, endpoint=endpoint, judge=judge, quiet=contextlib.nullcontext)
    finally:
        if server is not None:
            server.stop()
        if database_url.startswith("postgres"):
            from django.db import connections

            connections.close_all()
            subprocess.run(["psql", f"{base}/postgres", "-qc", f"DROP DATABASE IF EXISTS {bench_db}"], check=False)
    if args.verbose:
        for outcome in outcomes:
            print(outcome.describe())
        print(f"judge calls: {judge.calls['judge']} ({judge.calls['labelled']} labelled answers, {judge.calls['rule']} by the rules)")
    print(summary(outcomes))


if __name__ == "__main__":
    main()
