"""Two Celery workers as if on two hosts: each in a working directory of its own (its own
TASKWRIGHT_VAR_DIR and MEDIA_ROOT, no local disk shared with the other or with the web), sharing
only the PostgreSQL database, the Redis broker and the S3-compatible object store (tests/s3.py).
An upload, Draft all, a batch of 16 graded rollouts and a pack build run across them, and the
web process (this test process, with yet another local directory) serves every result."""

import hashlib
import io
import re
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docx
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse

from authoring import services as authoring_services
from authoring.models import Document, DocumentStatus
from authoring.services import drafting
from llm.models import ModelEndpoint
from packs.models import Pack, PackStatus
from packs.services import pack_create
from reviews.models import Decision
from reviews.services import review_decide, submission_claim_next, submission_create
from rollouts import selectors as rollout_selectors
from rollouts import services as rollout_services
from rollouts.models import Grade, GradeStatus, RolloutStatus
from tests import factories
from tests.drafting.conftest import DRAFTS, path_of
from tests.fake_llm import Reply
from tests.uploads import builders
from tests.worker import WORKER_QUEUES, purge_queues, start_worker, stop_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

TIMEOUT = 60.0
ROLLOUTS = 16
ROOM = {"Deal/LOI.docx": ("file", "docx"), "Finance/Cap table.xlsx": ("file", "xlsx"), "Mail/Kickoff": ("email", "")}
ANSWER = "The purchase price is $12,000,000, per the letter of intent."


def wait_until(condition, *, what: str, timeout: float = TIMEOUT, poll: float = 0.2) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(poll)
    raise AssertionError(f"Timed out after {timeout:.0f}s waiting until {what}.")


def responder(request) -> Reply:
    """The model, for all three callers: drafting (by the document's path), the agent (read the
    letter of intent, then answer) and the judge."""
    messages = request.body.get("messages", [])
    if path_of(request) in DRAFTS:
        return Reply(structured=DRAFTS[path_of(request)], delay=0.05)
    if any("You grade one response" in str(m.get("content", "")) for m in messages if m.get("role") == "system"):
        return Reply(structured={"explanation": "It states the price of the letter of intent.", "criteria_met": True}, delay=0.05)
    if not any(m.get("role") == "tool" for m in messages):
        return Reply(content=None, tool_calls=[{"name": "read_file", "arguments": {"path": "Deal/LOI.docx"}}], delay=0.05)
    return Reply(content=ANSWER, delay=0.05)


def local_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.fixture
def two_hosts(s3_storage, tmp_path):
    """Two workers, each started in its own directory as a host's would be, on the shared
    database, broker and object store; stopped (and their logs shown on a failure) afterwards."""
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip("Hosts share a Redis broker: the filesystem broker lives in one machine's var/ (set CELERY_BROKER_URL).")
    if connection.vendor != "postgresql":
        pytest.skip("Hosts share a PostgreSQL database: SQLite is one machine's file (set DATABASE_URL).")
    purge_queues(WORKER_QUEUES)
    homes = [tmp_path / name for name in ("host-a", "host-b")]

    def start(home: Path):
        home.mkdir()
        environment = {
            "TASKWRIGHT_VAR_DIR": str(home / "var"), "MEDIA_ROOT": str(home / "media"),
            "PYTHONPATH": str(settings.BASE_DIR),  # the code is installed on every host; the directory is the host's
            "SECRET_KEY": settings.SECRET_KEY,  # one key for the deployment, as an operator sets it on every host
            **s3_storage.worker_environment(),
        }
        return start_worker(home, concurrency=4, extra_env=environment, cwd=home)

    with ThreadPoolExecutor(2) as pool:  # side by side: each start loads the whole app
        futures = [pool.submit(start, home) for home in homes]
    started = [f.result() for f in futures if f.exception() is None]
    if len(started) < len(homes):
        for worker in started:
            stop_worker(worker)
        next(f for f in futures if f.exception() is not None).result()  # raises why one did not start
    try:
        yield list(zip(homes, started, strict=True))
    finally:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(stop_worker, started))
        for worker in started:
            print(f"--- log of {worker.nodename} ---\n{worker.log_text()[-8_000:]}")  # shown when the test fails


def test_an_upload_draft_all_graded_rollouts_and_a_pack_across_two_worker_hosts(client, team, fake_llm, s3_storage, two_hosts,
                                                                                 settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "web" / "media"  # the web's own disk, shared with no worker
    fake_llm.responder = responder
    endpoint = ModelEndpoint.objects.create(
        name="fake", kind="openai_compatible", base_url=fake_llm.url, model="fake-model", api_key_env="",
        max_concurrency=8, connect_timeout=2, read_timeout=10, max_retries=1,
    )
    world = authoring_services.world_create(project_id=team.project.pk, user=team.author, title="Acme acquires Beta",
                                            outline="Acme Corp buys Beta Ltd.", facts=[{"key": "Purchase price", "value": "$12,000,000"}])

    # 1. An upload, through the web: its original goes to the object store.
    client.force_login(team.author)
    original = builders.pdf_bytes(["Board minutes", "The board approved the purchase price of $12,000,000."])
    uploaded = client.post(reverse("world-upload", args=[world.pk]), {"files": [SimpleUploadedFile("Board minutes.pdf", original)]})
    assert uploaded.status_code == 302, uploaded.content[:2000]
    minutes = world.documents.get(source_name="Board minutes.pdf")

    # 2. Draft all, on the workers.
    for path, (kind, format_) in ROOM.items():
        authoring_services.document_create(world=world, user=team.author, path=path, kind=kind, format=format_, brief=f"Brief for {path}")
    run = drafting.draft_run_start(world=world, user=team.author, endpoint=endpoint)  # queued on commit
    wait_until(lambda: drafting.draft_run_progress(run=run)["is_finished"], what="Draft all is finished")
    assert drafting.draft_run_progress(run=run)["done"] == len(ROOM)
    assert set(world.documents.filter(path__in=ROOM).values_list("status", flat=True)) == {DocumentStatus.DRAFTED}

    # 3. A batch of 16 rollouts that read the drafted letter, each graded by a check and the judge.
    env_task = authoring_services.env_task_create(world=world, user=team.author, title="State the purchase price",
                                                  prompt="Read the data room and state the purchase price.",
                                                  reference_answer="The purchase price is $12,000,000.")
    for text, kind, config in (("States the price of $12,000,000", "check", {"check": "contains", "value": "12,000,000"}),
                               ("Names the letter of intent as its source", "llm_judge", {})):
        rubric = env_task.rubric_versions.get()
        authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text=text, points=5,
                                         tag="essential", grader_kind=kind, grader_config=config)
    batch = rollout_services.rollout_batch_start(env_task=env_task, user=team.author, endpoint=endpoint, n=ROLLOUTS)
    wait_until(lambda: rollout_selectors.batch_progress(batch=batch)["is_finished"], what="the 16 rollouts are finished")
    grades = Grade.objects.filter(rollout__batch=batch)
    wait_until(lambda: grades.count() == ROLLOUTS and not grades.exclude(status=GradeStatus.GRADED).exclude(
        status=GradeStatus.FAILED).exists(), what="the 16 rollouts are graded")
    assert set(batch.rollouts.values_list("status", flat=True)) == {RolloutStatus.COMPLETED}
    assert [(g.status, g.score, g.passed) for g in grades] == [(GradeStatus.GRADED, 1.0, True)] * ROLLOUTS

    # 4. Submitted, approved, and a pack built by a worker.
    submission = submission_create(env_task=env_task, user=team.author)
    claimed = submission_claim_next(user=team.reviewer)
    review_decide(submission=claimed, user=team.reviewer, decision=Decision.APPROVE, comment="Good.",
                  checklist=factories.checklist(claimed.project_id))
    pack = pack_create(project_id=team.project.pk, user=team.admin, name="Release", submission_ids=[submission.pk])
    wait_until(lambda: Pack.objects.get(pk=pack.pk).is_done, what="the pack is built")
    pack.refresh_from_db()
    assert pack.status == PackStatus.READY, pack.error

    # Both hosts did the work, each in its own process.
    logs = {home.name: worker.log_text() for home, worker in two_hosts}
    for name, log in logs.items():
        assert re.search(r"Task rollouts\.tasks\.run_rollout\[[0-9a-f-]+\] succeeded", log), f"{name} ran no rollout"
    assert sum(len(re.findall(r"Task packs\.tasks\.build_pack\[[0-9a-f-]+\] succeeded", log)) for log in logs.values()) == 1

    # 5. The web serves every result, from the object store: nothing is on any local disk.
    client.force_login(team.author)
    served = client.get(reverse("document-source-download", args=[minutes.pk]))
    assert served.status_code == 200 and served.content == original
    letter = world.documents.get(path="Deal/LOI.docx")
    drafted = client.get(reverse("document-download", args=[letter.pk]))
    assert drafted.status_code == 200 and drafted["Content-Disposition"].startswith("attachment")
    assert any("$12,000,000" in p.text for p in docx.Document(io.BytesIO(drafted.content)).paragraphs)
    page = client.get(reverse("batch-detail", args=[batch.pk]))
    assert page.status_code == 200 and f"{ROLLOUTS} of {ROLLOUTS}" in page.content.decode()
    client.force_login(team.admin)
    download = client.get(reverse("pack-download", args=[pack.pk]))
    data = b"".join(download.streaming_content)
    assert download.status_code == 200 and hashlib.sha256(data).hexdigest() == pack.sha256
    with zipfile.ZipFile(io.BytesIO(data)) as archive, zipfile.ZipFile(
            io.BytesIO(archive.read(f"world_files_zipped/world-{world.pk}.zip"))) as world_zip:
        assert {"filesystem/Deal/LOI.docx", "filesystem/Finance/Cap table.xlsx"} <= set(world_zip.namelist())
        assert f"task-{env_task.pk}" in archive.read("taskwright/tasks.jsonl").decode()

    stored = s3_storage.keys()
    assert minutes.source_file.name in stored and pack.file.name in stored
    assert any(name.startswith("packs/world-cache/") for name in stored)
    for root in [settings.MEDIA_ROOT, *(home / "media" for home, _ in two_hosts)]:
        assert local_files(root) == [], root
    assert Document.objects.filter(world=world).count() == len(ROOM) + 1
