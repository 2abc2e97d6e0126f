"""Drafting on a real Celery worker, on the real broker and the test database.

The fake model server runs in this process; the worker subprocess calls it over loopback.
The endpoint has no api_key_env, so the worker needs no secret in its environment.
"""

import csv
import dataclasses
import datetime as dt
import email
import email.policy
import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator

import docx
import icalendar
import openpyxl
import pptx
import pytest
from django.conf import settings

from authoring import services
from authoring.models import Document, DocumentStatus, DocumentVersion, DraftJob, DraftJobStatus, VersionSource
from authoring.rendering import render_file
from authoring.services import drafting
from core.jobs import ran as jobs_ran
from llm.models import ModelCall, ModelEndpoint
from tests.drafting.conftest import path_of, scripted_responder
from tests.worker import (
    READY_TIMEOUT,
    WORKER_QUEUES,
    WorkerProcess,
    _stop,
    _wait_until_ready,
    database_url_for_subprocess,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

RUN_TIMEOUT = 60.0
# On Redis an unacknowledged message comes back after the visibility timeout (90 s in
# production, renewed while its worker lives). The SIGKILL test shortens it for its
# workers, short enough to wait for.
SHORT_VISIBILITY_TIMEOUT = 8


def _block(type_, text="", level=0, items=(), header=(), rows=()):
    return {"type": type_, "level": level, "text": text, "items": list(items), "header": list(header), "rows": [list(r) for r in rows]}


ADDRESS_DANA = {"name": "Dana Ruiz", "email": "dana@acme.test"}
ADDRESS_SAM = {"name": "Sam Lee", "email": "sam@beta.test"}

# One document of each kind and format, as the model drafts it (rendering/schemas.py).
ROOM = {
    "Deal/Share purchase agreement.docx": ("file", "docx", {"blocks": [
        _block("heading", "Share purchase agreement", level=1),
        _block("paragraph", "Acme Corp buys all shares of Beta Ltd for a purchase price of $12,000,000."),
        _block("numbered", items=["Completion: 2026-03-31", "Escrow: $1,200,000 for 18 months"]),
        _block("table", header=["Party", "Role"], rows=[["Acme Corp", "Buyer"], ["Beta Holdings", "Seller"]]),
    ]}),
    "Finance/Cap table.xlsx": ("file", "xlsx", {"sheets": [{"name": "Cap table", "rows": [
        ["Holder", "Shares", "Stake"],
        ["Founders", "6000000", "=B2/B$4"],
        ["Investors", "4000000", "=B3/B$4"],
        ["Total", "=SUM(B2:B3)", "=SUM(C2:C3)"],
    ], "formats": [{"range": "B2:B4", "number_format": "#,##0"}, {"range": "C2:C4", "number_format": "0.0%"}]}]}),
    "Board/Deal update.pptx": ("file", "pptx", {"title": "Project Beta", "slides": [
        {"title": "Terms", "bullets": ["Price: $12,000,000", "Completion: 2026-03-31"], "notes": "Stress that the price is fixed."},
        {"title": "Next steps", "bullets": ["Sign the SPA", "Notify the regulator"], "notes": ""},
    ]}),
    "Deal/Closing checklist.md": ("file", "md", {"blocks": [
        _block("heading", "Closing checklist", level=1),
        _block("bullets", items=["Board consent", "Escrow funded"]),
    ]}),
    "Finance/Payments.csv": ("file", "csv", {"rows": [
        ["Date", "Payee", "Amount"], ["2026-03-31", "Beta Holdings", "10800000"], ["2026-03-31", "Escrow agent", "1200000"],
    ]}),
    "Mail/Kickoff": ("email", "", {
        "from": ADDRESS_DANA, "to": [ADDRESS_SAM], "cc": [], "bcc": [], "date": "2026-01-05T09:00:00+01:00",
        "subject": "Project Beta kick-off", "attachments": [], "body": "Sam,\n\nThe purchase price is $12,000,000.\n\nDana",
    }),
    "Chat/deal-team/Price agreed": ("chat", "", {
        "channel": "deal-team", "from": ADDRESS_SAM, "date": "2026-01-06T10:15:00+00:00", "text": "Price agreed at $12m, SPA next.",
    }),
    "Calendar/Signing": ("event", "", {
        "subject": "SPA signing", "start": "2026-03-30T14:00:00+02:00", "end": "2026-03-30T15:30:00+02:00",
        "location": "Acme HQ, room 4", "attendees": [ADDRESS_DANA, ADDRESS_SAM], "description": "1. Sign\n2. Fund escrow",
    }),
}
DRAFTS = {path: structured for path, (_kind, _format, structured) in ROOM.items()}


def make_endpoint(fake_llm, *, read_timeout: float = 10) -> ModelEndpoint:
    # No api_key_env: the worker subprocess needs no key in its environment.
    return ModelEndpoint.objects.create(
        name="fake", kind="openai_compatible", base_url=fake_llm.url, model="fake-model", api_key_env="",
        max_concurrency=4, connect_timeout=2, read_timeout=read_timeout, max_retries=1,
        price_input_per_mtok="1.00", price_output_per_mtok="2.00",
    )


def add_skeleton(world, user, paths) -> list[Document]:
    return [
        services.document_create(world=world, user=user, path=path, kind=ROOM[path][0], format=ROOM[path][1], brief=f"Brief for {path}")
        for path in paths
    ]


def wait_until(condition: Callable[[], bool], *, timeout: float, what: str, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(poll)
    raise AssertionError(f"Timed out after {timeout:.0f}s waiting until {what}.")


def run_finished(run) -> bool:
    return drafting.draft_run_progress(run=run)["is_finished"]


def rendered(document: Document) -> bytes:
    return render_file(document.kind, document.format, document.content, document.metadata, path=document.path).data


def test_a_real_worker_drafts_every_kind_of_document_into_files_that_open(team, drafting_world, fake_llm, celery_worker_process):
    endpoint = make_endpoint(fake_llm)
    add_skeleton(drafting_world, team.author, ROOM)
    fake_llm.responder = scripted_responder(DRAFTS)

    run = drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint)  # queued on commit
    wait_until(lambda: run_finished(run), timeout=RUN_TIMEOUT, what="the draft run is finished")

    progress = drafting.draft_run_progress(run=run)
    failures = list(run.jobs.exclude(status=DraftJobStatus.DONE).values_list("document__path", "status", "error"))
    assert failures == []
    assert (progress["total"], progress["done"], progress["failed"], progress["remaining"]) == (len(ROOM), len(ROOM), 0, 0)
    assert progress["input_tokens"] == 1200 * len(ROOM) and progress["output_tokens"] == 400 * len(ROOM)
    assert sorted(path_of(r) for r in fake_llm.requests) == sorted(ROOM)  # one model call per document, none repeated
    assert ModelCall.objects.filter(purpose="drafting", outcome="ok").count() == len(ROOM)

    docs = {d.path: d for d in drafting_world.documents.all()}
    assert {path: d.status for path, d in docs.items()} == dict.fromkeys(ROOM, DocumentStatus.DRAFTED)
    for document in docs.values():
        assert [(v.number, v.source) for v in document.versions.all()] == [(1, VersionSource.DRAFTED)], document.path
        assert document.versions.get().note == "Drafted by fake"

    word = docx.Document(io.BytesIO(rendered(docs["Deal/Share purchase agreement.docx"])))
    headings = [p.text for p in word.paragraphs if p.style.name.startswith("Heading")]
    assert headings == ["Share purchase agreement"]
    assert any("purchase price of $12,000,000" in p.text for p in word.paragraphs)
    assert [c.text for c in word.tables[0].rows[2].cells] == ["Beta Holdings", "Seller"]

    data = rendered(docs["Finance/Cap table.xlsx"])
    values = openpyxl.load_workbook(io.BytesIO(data), data_only=True)["Cap table"]
    assert values["B4"].value == 10_000_000 and values["C2"].value == pytest.approx(0.6)  # cached formula results
    formulas = openpyxl.load_workbook(io.BytesIO(data))["Cap table"]
    assert formulas["B4"].value == "=SUM(B2:B3)" and formulas["B2"].number_format == "#,##0"

    deck = pptx.Presentation(io.BytesIO(rendered(docs["Board/Deal update.pptx"])))
    titles = [slide.shapes.title.text for slide in deck.slides if slide.shapes.title is not None]
    assert titles[-2:] == ["Terms", "Next steps"]
    terms = next(s for s in deck.slides if s.shapes.title is not None and s.shapes.title.text == "Terms")
    assert "Price: $12,000,000" in [p.text for shape in terms.shapes if shape.has_text_frame for p in shape.text_frame.paragraphs]
    assert terms.notes_slide.notes_text_frame.text == "Stress that the price is fixed."

    markdown = rendered(docs["Deal/Closing checklist.md"]).decode()
    assert markdown.startswith("# Closing checklist") and "- Escrow funded" in markdown

    rows = list(csv.reader(io.StringIO(rendered(docs["Finance/Payments.csv"]).decode("utf-8-sig"))))
    assert rows == DRAFTS["Finance/Payments.csv"]["rows"]

    message = email.message_from_bytes(rendered(docs["Mail/Kickoff"]), policy=email.policy.default)
    assert message["Subject"] == "Project Beta kick-off"
    assert message["From"].addresses[0].addr_spec == "dana@acme.test" and message["To"].addresses[0].display_name == "Sam Lee"
    assert message["Date"].endswith("+0100")  # a numeric offset, as drafted
    assert "The purchase price is $12,000,000." in message.get_body(("plain",)).get_content()

    chat = json.loads(rendered(docs["Chat/deal-team/Price agreed"]))
    assert (chat["group_name"], chat["creator"]["email"], chat["text"]) == ("deal-team", "sam@beta.test", "Price agreed at $12m, SPA next.")
    assert chat["created_date"] == "2026-01-06T10:15:00Z"

    calendar = icalendar.Calendar.from_ical(rendered(docs["Calendar/Signing"]))
    (event,) = calendar.walk("VEVENT")
    assert str(event["SUMMARY"]) == "SPA signing" and str(event["LOCATION"]) == "Acme HQ, room 4"
    assert event.decoded("DTSTART") == dt.datetime.fromisoformat("2026-03-30T14:00:00+02:00")  # the same instant
    assert event.decoded("DTEND") == dt.datetime.fromisoformat("2026-03-30T15:30:00+02:00")
    assert all(name in event for name in ("UID", "CREATED", "LAST-MODIFIED"))
    attendees = event["ATTENDEE"] if isinstance(event["ATTENDEE"], list) else [event["ATTENDEE"]]
    assert sorted((str(a).lower(), a.params["CN"]) for a in attendees) == [
        ("mailto:dana@acme.test", "Dana Ruiz"),
        ("mailto:sam@beta.test", "Sam Lee"),
    ]

    # Drafting all again finds nothing to do: nothing is drafted twice.
    with pytest.raises(Exception, match="Every document already has content"):
        drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint)


# --- A worker killed mid-job ---------------------------------------------------------------------

@pytest.fixture
def short_visibility_timeout(monkeypatch) -> None:
    """Read by config/settings.py in every worker started after this (they copy os.environ)."""
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip(
            "The filesystem broker cannot redeliver a killed worker's jobs: kombu moves a message's file out of the "
            "queue folder when a worker fetches it and keeps it unacknowledged only in that worker's memory."
        )
    monkeypatch.setenv("CELERY_VISIBILITY_TIMEOUT", str(SHORT_VISIBILITY_TIMEOUT))
    # The killed worker's jobs stop beating at once; the redelivery after the visibility
    # timeout finds their heartbeats this much older and takes them over.
    monkeypatch.setenv("JOB_STALE_SECONDS", str(SHORT_VISIBILITY_TIMEOUT / 2))


@pytest.fixture
def start_worker(tmp_path_factory) -> Iterator[Callable[[], WorkerProcess]]:
    """Start more workers the way tests/worker.py's fixture does, but without purging the
    queues: what the killed worker left behind must still be there for the next one."""
    started: list[WorkerProcess] = []

    def start() -> WorkerProcess:
        nodename = f"test-{uuid.uuid4().hex[:8]}@localhost"
        env = {
            **os.environ,
            "DATABASE_URL": database_url_for_subprocess(),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "DEBUG": os.environ.get("DEBUG") or "1",
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "PYTHONUNBUFFERED": "1",
        }
        log_path = tmp_path_factory.mktemp("celery-worker") / "worker.log"
        command = [
            sys.executable, "-m", "celery", "-A", "config", "worker",
            "-Q", ",".join(WORKER_QUEUES), "--pool", "threads", "-c", "2", "-l", "info", "-n", nodename,
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ]
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command, cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        worker = WorkerProcess(process=process, log_path=log_path, nodename=nodename)
        started.append(worker)
        _wait_until_ready(worker, READY_TIMEOUT)
        return worker

    yield start
    for worker in started:
        _stop(worker)
        print(f"--- log of {worker.nodename} ---\n{worker.log_text()[-10_000:]}")  # shown when the test fails


def test_a_killed_worker_loses_and_duplicates_nothing(
    short_visibility_timeout, team, drafting_world, fake_llm, celery_worker_process, start_worker
):
    # short_visibility_timeout comes first so the fixture's worker is started with it too.
    endpoint = make_endpoint(fake_llm)
    paths = ["Deal/Share purchase agreement.docx", "Finance/Cap table.xlsx", "Mail/Kickoff", "Calendar/Signing"]
    documents = add_skeleton(drafting_world, team.author, paths)
    respond = scripted_responder(DRAFTS)
    fake_llm.responder = lambda request: dataclasses.replace(respond(request), delay=3.0)

    run = drafting.draft_run_start(world=drafting_world, user=team.author, endpoint=endpoint)
    running = DraftJob.objects.filter(run=run, status=DraftJobStatus.RUNNING)
    wait_until(lambda: running.exists(), timeout=30, what="the first worker has claimed a job")
    time.sleep(0.3)  # let its second thread claim one too, when it will
    os.kill(celery_worker_process.process.pid, signal.SIGKILL)
    celery_worker_process.process.wait(timeout=10)
    interrupted = set(running.values_list("document__path", flat=True))
    ran = set(running.filter(jobs_ran()).values_list("document__path", flat=True))  # beaten at least once before the kill
    called_before_kill = Counter(path_of(r) for r in list(fake_llm.requests))
    assert interrupted and not any(d.status == DocumentStatus.DRAFTED for d in Document.objects.filter(pk__in=[d.pk for d in documents]))

    start_worker()
    # Its queued jobs at once; the killed worker's, once their messages come back from
    # the broker after the visibility timeout.
    wait_until(lambda: run_finished(run), timeout=RUN_TIMEOUT, what="every job has reached a terminal state")

    jobs = list(DraftJob.objects.filter(run=run).select_related("document"))
    assert sorted(j.document.path for j in jobs) == sorted(paths)  # one job per document, none added
    assert {j.document.path: (j.status, j.error) for j in jobs} == dict.fromkeys(paths, (DraftJobStatus.DONE, ""))
    # A job the killed worker was running was claimed a second time (the redelivered
    # message), and that used a second attempt only if the first one ran (core.jobs: a
    # claim killed before its first heartbeat did no work); every other job once.
    assert {j.document.path: j.attempts for j in jobs} == {p: 2 if p in ran else 1 for p in paths}
    assert set(called_before_kill) <= interrupted  # the killed worker only called for the jobs it was running
    assert Counter(path_of(r) for r in fake_llm.requests) - called_before_kill == Counter(paths)  # then one call per document
    assert ModelCall.objects.filter(purpose="drafting", outcome="ok").count() == len(paths)

    for document in Document.objects.filter(world=drafting_world):
        assert document.status == DocumentStatus.DRAFTED, document.path
        assert list(DocumentVersion.objects.filter(document=document).values_list("number", "source")) == [(1, VersionSource.DRAFTED)]
        assert document.revision == 2  # created at 1, drafted once
        rendered(document)  # and it renders
