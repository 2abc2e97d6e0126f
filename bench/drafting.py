"""Benchmark: draft a 200-document world through a real Celery worker against the fake
model server, with a fixed latency per model call and a concurrency cap C on the endpoint.

    ideal = ceil(documents / C) × latency        (the cap is the only limit)
    last line:  drafting wall/ideal: <ratio>      (target ≤ 1.2)

Also prints the worker's peak memory (VmHWM). Uses the database and broker the
environment names (PostgreSQL + Redis recommended: `DATABASE_URL=… REDIS_URL=… `),
in a fresh database it creates and drops (PostgreSQL) or a temporary SQLite file.

    .venv/bin/python bench/drafting.py [--documents 200] [--cap 8] [--latency 0.5] [--threads 16]
"""

import argparse
import contextlib
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--cap", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--threads", type=int, default=16)
    args = parser.parse_args()

    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("MODEL_ALLOW_PRIVATE_NETWORKS", "1")  # the fake model server is on 127.0.0.1 (the workers inherit it)
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
    from accounts.models import Membership, Project, User
    from authoring import services
    from authoring.services import drafting
    from config.celery import app
    from llm.models import ModelEndpoint
    from tests.fake_llm import FakeLLMServer, Reply

    server = FakeLLMServer().start()
    body = {"blocks": [{"type": "paragraph", "level": 0, "text": "Drafted text. " * 40, "items": [], "header": [], "rows": []}]}
    server.responder = lambda request: Reply(structured=body, delay=args.latency)

    user = User.objects.create_user("bench", password=uuid.uuid4().hex)
    project = Project.objects.create(name="Bench", slug="bench")
    Membership.objects.create(project=project, user=user, role="author")
    world = services.world_create(project_id=project.pk, user=user, title="Bench world", outline="A bench.")
    for i in range(args.documents):
        services.document_create(world=world, user=user, path=f"Docs/Doc {i:03}.md", brief=f"Document {i}")
    endpoint = ModelEndpoint.objects.create(
        name="fake", kind="openai_compatible", base_url=server.url, model="fake", max_concurrency=args.cap, read_timeout=30
    )

    with app.connection_for_write() as conn:
        for queue in ("drafting",):
            with contextlib.suppress(Exception):
                conn.default_channel.queue_purge(queue)
    log = var_dir / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "drafting", "--pool", "threads", "-c", str(args.threads),
         "-l", "info", "--without-heartbeat", "--without-gossip", "--without-mingle", "-n", f"bench-{uuid.uuid4().hex[:6]}@%h"],
        cwd=ROOT, env=dict(os.environ), stdout=log.open("w"), stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while "ready." not in log.read_text(errors="replace"):
            if time.monotonic() > deadline or worker.poll() is not None:
                sys.exit(f"worker did not start:\n{log.read_text()}")
            time.sleep(0.2)
        started = time.monotonic()
        run = drafting.draft_run_start(world=world, user=user, endpoint=endpoint)
        while True:
            progress = drafting.draft_run_progress(run=run)
            if progress["is_finished"]:
                break
            if time.monotonic() - started > 600:
                sys.exit("timed out")
            time.sleep(0.05)
        wall = time.monotonic() - started
        peak_kib = next(
            (int(line.split()[1]) for line in Path(f"/proc/{worker.pid}/status").read_text().splitlines() if line.startswith("VmHWM")), 0
        )
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
        server.stop()
        if database_url.startswith("postgres"):
            from django.db import connections

            connections.close_all()
            subprocess.run(["psql", f"{base}/postgres", "-qc", f"DROP DATABASE IF EXISTS {bench_db}"], check=False)

    failed = progress["failed"]
    ideal = math.ceil(args.documents / args.cap) * args.latency
    print(f"documents: {args.documents}  cap: {args.cap}  latency: {args.latency}s  worker threads: {args.threads}")
    print(f"done: {progress['done']}  failed: {failed}  peak in flight at the model: {server.max_in_flight}")
    print(f"wall: {wall:.2f}s  ideal: {ideal:.2f}s")
    print(f"worker peak memory (VmHWM): {peak_kib / 1024:.0f} MiB")
    print(f"drafting wall/ideal: {wall / ideal:.2f}")


if __name__ == "__main__":
    main()
