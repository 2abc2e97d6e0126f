"""Benchmark: building a pack of N approved tasks over 10 worlds of 20 documents, in every
format, against `zip -r` of the same unpacked bytes, and the build's peak memory.

    pack build/zip: X          build time / (zip -r of the pack's files, unpacked)   goal ≤ 3
                               (first build; then again with the worlds in the world cache,
                               in the same process, as a packs worker's next build, and in a
                               fresh process)
    pack peak rss MB: N        peak RSS of the process that builds, or of the short-lived child
                               it renders the worlds in, whichever is larger (--tasks 1000 and
                               5000: goal within 20 MB of each other, and under 250 MB)

The data is made straight in the database (bulk inserts, not the services: it is the
build that is measured): 10 worlds of 20 documents (docx, xlsx, pptx, pdf, md, csv,
emails, a chat message, an event), N tasks spread over them, each with a 6-criterion
rubric and one approved submission whose snapshot is what submission_create freezes.
The builds run in child processes (`--build-only`), so their peak RSS is the build's and
the Django process it needs, not the data set-up's: one child builds the pack twice (the
first build renders every world; the second, like a packs worker's next build, finds them in
the world cache, with the libraries already loaded), another builds it once more on its own
(the world cache, in a fresh process).

Uses the database the environment names (PostgreSQL: `DATABASE_URL=postgres://…`), in a
fresh database it creates and drops; without one a temporary SQLite file.

    .venv/bin/python bench/packs.py [--tasks 1000 5000]
"""

import argparse
import io
import json
import os
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
WORLDS, DOCUMENTS = 10, 20


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # As in production: with DEBUG on, Django keeps every query's SQL in memory.
    os.environ |= {"DEBUG": "0", "SECRET_KEY": os.environ.get("BENCH_SECRET_KEY") or secrets.token_urlsafe(64),
                   "ALLOWED_HOSTS": "127.0.0.1", "SECURE_SSL_REDIRECT": "0"}
    os.environ["BENCH_SECRET_KEY"] = os.environ["SECRET_KEY"]
    import django

    django.setup()


def _documents() -> list[dict]:
    from tests.rendering.samples import CAP_TABLE, DECK, MEMO

    kinds = [("file", "docx", MEMO, {}), ("file", "xlsx", CAP_TABLE, {}), ("file", "pptx", DECK, {}), ("file", "pdf", MEMO, {}),
             ("file", "md", "# Notes\n\n" + "The price is $12m. " * 40, {}), ("file", "csv", "name,share\nAcme,60\nBeta,40\n", {})]
    rows = []
    for i in range(DOCUMENTS - 3):
        kind, fmt, content, metadata = kinds[i % len(kinds)]
        rows.append({"path": f"Deal/Doc {i + 1:02d}.{fmt}", "kind": kind, "format": fmt, "content": content, "metadata": metadata})
    rows.append({"path": "Mail/Offer", "kind": "email", "format": "", "content": "Please find the offer attached.\n", "metadata": {
        "from": "Ann Lee <ann@acme.test>", "to": "Bo Chen <bo@beta.test>", "date": "2026-03-02T09:30:00+00:00", "subject": "Offer — Beta"}})
    rows.append({"path": "Chat/deal/001", "kind": "chat", "format": "", "content": "Signing moved to Friday.", "metadata": {
        "channel": "deal", "from": "Ann Lee <ann@acme.test>", "date": "2026-03-03T10:00:00+00:00"}})
    rows.append({"path": "Calendar/Signing", "kind": "event", "format": "", "content": "Signing call.", "metadata": {
        "subject": "Signing", "start": "2026-03-06T15:00:00+00:00", "end": "2026-03-06T16:00:00+00:00",
        "attendees": "Ann Lee <ann@acme.test>"}})
    return rows


def make_data(tasks: int) -> tuple[int, int]:
    """The project and an admin; N approved tasks over 10 worlds."""
    from accounts.models import Membership, Project, Role, User
    from authoring.models import Criterion, Document, DocumentStatus, EnvTask, RubricVersion, World
    from authoring.services.tasks import env_task_snapshot
    from reviews.models import Submission, SubmissionStatus

    project = Project.objects.create(name="Bench", slug=f"bench-{uuid.uuid4().hex[:6]}")
    admin = User.objects.create_user(username=f"admin-{uuid.uuid4().hex[:6]}", password=uuid.uuid4().hex)
    Membership.objects.create(project=project, user=admin, role=Role.ADMIN)
    # The outline names the size, so each size's worlds are new to the world cache: its first build renders them.
    worlds = World.objects.bulk_create([World(project=project, title=f"World {w + 1}", outline=f"Acme buys Beta ({tasks} tasks).",
                                              facts=[{"key": "Price", "value": "$12m"}]) for w in range(WORLDS)])
    Document.objects.bulk_create([Document(world=w, position=i, status=DocumentStatus.EDITED, **d) for w in worlds
                                  for i, d in enumerate(_documents())])
    criteria = [("States the price", 10, "essential"), ("Names the parties", 8, "essential"), ("Cites the SPA", 4, "important"),
                ("Gives the closing date", 4, "important"), ("Is concise", 2, "optional"), ("Invents a figure", -6, "pitfall")]
    made = 0
    while made < tasks:
        chunk = min(500, tasks - made)
        env_tasks = EnvTask.objects.bulk_create([
            EnvTask(project=project, world=worlds[(made + i) % WORLDS], title=f"Task {made + i + 1}",
                    prompt=f"Question {made + i + 1}: what is the price?", reference_answer="The price is $12m.", status="approved")
            for i in range(chunk)])
        rubrics = RubricVersion.objects.bulk_create([RubricVersion(env_task=t, number=1) for t in env_tasks])
        Criterion.objects.bulk_create([Criterion(rubric_version=r, position=p, text=text, points=points, tag=tag)
                                       for r in rubrics for p, (text, points, tag) in enumerate(criteria)])
        snapshots = {}
        for t, r in zip(env_tasks, rubrics, strict=True):
            if t.world_id not in snapshots:
                snapshots[t.world_id] = env_task_snapshot(env_task=t, rubric_version=r)
        Submission.objects.bulk_create([
            Submission(project=project, env_task=t, number=1, rubric_version=r, status=SubmissionStatus.APPROVED,
                       snapshot={**snapshots[t.world_id],
                                 "task": {**snapshots[t.world_id]["task"], "id": t.pk, "title": t.title, "prompt": t.prompt}})
            for t, r in zip(env_tasks, rubrics, strict=True)])
        made += chunk
    return project.pk, admin.pk


def build_only(pack_ids: list[int]) -> None:
    """In the child: build each pack in turn; after each, print its time and the peak RSS so far."""
    _setup_django()
    from packs.services import pack_build

    for pack_id in pack_ids:
        started = time.perf_counter()
        pack_build(pack_id=pack_id)
        elapsed = time.perf_counter() - started
        print(json.dumps({"seconds": elapsed, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                          "render_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}), flush=True)


def zip_seconds(pack_bytes: bytes) -> float:
    """`zip -r` of the pack's files, unpacked, at zip's default level."""
    with tempfile.TemporaryDirectory() as folder:
        zipfile.ZipFile(io.BytesIO(pack_bytes)).extractall(folder)
        started = time.perf_counter()
        subprocess.run(["zip", "-qr", os.path.join(folder, "..", f"{Path(folder).name}.zip"), "."], cwd=folder, check=True)
        elapsed = time.perf_counter() - started
        os.remove(os.path.join(folder, "..", f"{Path(folder).name}.zip"))
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--build-only", type=int, nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_only:
        return build_only(args.build_only)
    if shutil.which("zip") is None:
        sys.exit("bench/packs.py needs the zip program (apt-get install zip).")
    database_url = os.environ.get("DATABASE_URL", "")
    var_dir = Path(tempfile.mkdtemp(prefix="tw-bench-packs-"))
    os.environ["TASKWRIGHT_VAR_DIR"] = str(var_dir)
    bench_db = f"tw_bench_packs_{uuid.uuid4().hex[:8]}"
    base = database_url.rsplit("/", 1)[0] if database_url.startswith("postgres") else ""
    if base:
        subprocess.run(["psql", f"{base}/postgres", "-qc", f"CREATE DATABASE {bench_db}"], check=True)
        os.environ["DATABASE_URL"] = f"{base}/{bench_db}"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    _setup_django()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    try:
        print(f"database: {connection.vendor}")
        for tasks in args.tasks:
            _measure(tasks)
    finally:
        connection.close()
        if base:
            subprocess.run(["psql", f"{base}/postgres", "-qc", f"DROP DATABASE IF EXISTS {bench_db} WITH (FORCE)"], check=False)
        shutil.rmtree(var_dir, ignore_errors=True)


def _measure(tasks: int) -> None:
    from accounts.models import User
    from packs.models import Pack, PackStatus
    from packs.services import pack_create
    from reviews.models import Submission

    started = time.perf_counter()
    project_id, admin_id = make_data(tasks)
    print(f"{tasks} tasks: data made in {time.perf_counter() - started:.1f} s")
    admin = User.objects.get(pk=admin_id)
    ids = list(Submission.objects.filter(project_id=project_id).values_list("pk", flat=True))
    kinds = ["first build, every world rendered", "worlds cached, same process (a worker's next build)",
             "worlds cached, fresh process"]
    packs = [pack_create(project_id=project_id, user=admin, name="Bench", submission_ids=ids) for _ in kinds]
    results = []
    for children in ([packs[0], packs[1]], [packs[2]]):
        child = subprocess.run([sys.executable, __file__, "--build-only", *(str(p.pk) for p in children)],
                               capture_output=True, text=True, check=True, env=os.environ)
        results += [json.loads(line) for line in child.stdout.strip().splitlines() if line.startswith("{")]
    ratios = []
    for kind, pack, result in zip(kinds, packs, results, strict=True):
        pack.refresh_from_db()
        if pack.status != PackStatus.READY:
            sys.exit(f"the build failed: {pack.error}")
        with pack.file.open("rb") as handle:
            data = handle.read()
        zipped = zip_seconds(data)
        ratios.append(result["seconds"] / zipped)
        print(f"  {kind}: build {result['seconds']:.2f} s, zip -r {zipped:.2f} s, pack {len(data) / 1e6:.1f} MB, "
              f"peak RSS {result['peak_rss_mb']:.0f} MB (rendering child: {result['render_rss_mb']:.0f} MB)")
        Pack.objects.filter(pk=pack.pk).delete()
    print(f"tasks: {tasks}")
    print(f"pack build/zip: {ratios[0]:.2f}")
    print(f"pack build/zip, worlds cached: {ratios[1]:.2f} (same process), {ratios[2]:.2f} (fresh process)")
    def peak(result: dict) -> float:
        return max(result["peak_rss_mb"], result["render_rss_mb"])

    print(f"pack peak rss MB: {peak(results[0]):.0f} (worlds cached, fresh process: {peak(results[2]):.0f})")


if __name__ == "__main__":
    main()
