"""The whole path through the browser: author → reviewer → author → reviewer → admin.

Only the users, the project and the world are made up front (factories); everything
else is done by clicking through the pages, and the checks are what a person sees.
"""

import hashlib
import io
import json
import re
import signal
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services as authoring_services
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.worker import WorkerProcess

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PACK_BUILD_TIMEOUT_MS = 60_000


def sign_in(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(factories.PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()


def sign_out(page: Page) -> None:
    page.locator("#user-menu summary").click()  # Sign out sits in the user menu
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in to Taskwright")).to_be_visible()


def mark_page(page: Page) -> None:
    """A marker that only survives as long as no full page load happens."""
    page.evaluate("window.__sameDocument = true")


def assert_same_document(page: Page) -> None:
    assert page.evaluate("window.__sameDocument === true"), "an htmx action reloaded the whole page"


def answer_checklist(page: Page, *, fail: tuple[int, ...] = ()) -> None:
    """Answer every item of the review checklist: pass, except the rows in `fail` (0-based).
    First the comment sections above it finish loading: each swap moves the checklist down,
    and a click aimed before one lands beside its radio button (seen on a busy machine)."""
    expect(page.locator('[hx-trigger="load"]')).to_have_count(0)
    rows = page.locator("fieldset.checklist tbody tr")
    for i in range(rows.count()):
        rows.nth(i).get_by_label("Fail" if i in fail else "Pass").check()


@contextmanager
def paused(worker: WorkerProcess) -> Iterator[None]:
    """Freeze the worker process (it keeps its broker connection) and always thaw it."""
    worker.process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        worker.process.send_signal(signal.SIGCONT)


def test_author_review_pack_journey(page: Page, live_server, celery_worker_process, console_log: ConsoleLog, screenshot_dir) -> None:
    base = live_server.url
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    reviewer = factories.member(project, Role.REVIEWER, username="rita-reviewer")
    admin = factories.member(project, Role.ADMIN, username="adam-admin")
    world = factories.world(project, author, title="Acme acquires Beta", documents=2, drafted=True)

    # 1. The author signs in; the dashboard lists the project.
    page.goto(f"{base}/login/")
    page.screenshot(path=screenshot_dir / "01-login.png", full_page=True)
    sign_in(page, base, author.username)
    expect(page.get_by_role("link", name=re.compile("Corporate law — M&A"))).to_be_visible()
    page.screenshot(path=screenshot_dir / "02-dashboard.png", full_page=True)

    # 2. Project → world; the data room grows, is edited inline and reordered in place.
    page.get_by_role("link", name=re.compile("Corporate law — M&A")).click()
    page.get_by_role("link", name="Acme acquires Beta").click()
    expect(page.get_by_role("heading", name="Acme acquires Beta", level=1)).to_be_visible()
    data_room = page.locator("#data-room")
    expect(data_room.get_by_text("2 documents")).to_be_visible()
    mark_page(page)

    add_form = data_room.locator("form.add-document")
    add_form.get_by_label("Path").fill("Deal/Letter of intent.docx")
    add_form.get_by_label("Kind").select_option("file")
    add_form.get_by_label("Format").select_option("docx")
    add_form.get_by_label("Brief: what this document says").fill("Non-binding LOI: $12m, exclusivity to 31 March.")
    add_form.get_by_role("button", name="Add document").click()
    new_row = page.locator("#document-tree tr", has_text="Letter of intent.docx")
    expect(new_row).to_be_visible()
    expect(data_room.get_by_text("3 documents")).to_be_visible()
    assert_same_document(page)

    new_row.get_by_role("button", name="Edit Deal/Letter of intent.docx").click()
    editing = page.locator("#document-tree tr.editing")
    editing.get_by_label("Brief").fill("Signed LOI: $12m price, 60 days of exclusivity.")
    editing.get_by_label("Target size").fill("450")
    editing.get_by_role("button", name="Save").click()
    expect(page.locator("#document-tree tr.editing")).to_have_count(0)
    edited_row = page.locator("#document-tree tr", has_text="Letter of intent.docx")
    expect(edited_row).to_contain_text("Signed LOI: $12m price, 60 days of exclusivity.")
    expect(edited_row).to_contain_text("450")
    assert_same_document(page)

    deal_names = page.locator("#document-tree tbody", has_text="Deal/").locator("tr[id^=document-] td:first-child")
    before = deal_names.all_inner_texts()
    assert before[-1] == "Letter of intent.docx", before
    page.get_by_role("button", name="Move Deal/Letter of intent.docx up").click()
    expected = [*before[:-2], before[-1], before[-2]]
    expect(deal_names).to_have_text(expected)
    assert_same_document(page)
    page.screenshot(path=screenshot_dir / "03-world-editor.png", full_page=True)

    # 3. A new task from the world page: prompt, reference answer, rubric with a live total.
    page.get_by_label("New task title").fill("State the purchase price")
    page.get_by_role("button", name="New task").click()
    expect(page.get_by_role("heading", name=re.compile("State the purchase price"))).to_be_visible()
    expect(page.locator("#task-status")).to_have_text("Draft")
    mark_page(page)

    task_form = page.locator("#task-form")
    task_form.get_by_label("Prompt: what the agent is asked to do").fill("Read the data room and state the purchase price.")
    task_form.get_by_label("Reference answer: what an expert would deliver").fill("The price is $12m, per the signed LOI.")
    task_form.get_by_role("button", name="Save task").click()
    expect(page.locator("#task-form").get_by_role("status")).to_have_text("Saved.")
    assert_same_document(page)

    total = page.locator("#positive-points")
    expect(total).to_have_text("0")

    def add_criterion(text: str, points: int, tag: str) -> None:
        rubric = page.locator("#rubric")
        rubric.get_by_label("Criterion", exact=True).fill(text)
        rubric.get_by_label("Points (negative = penalty)").fill(str(points))
        rubric.get_by_label("Tag").select_option(tag)
        rubric.get_by_role("button", name="Add criterion").click()
        expect(page.locator("#criteria tr", has_text=text)).to_be_visible()

    add_criterion("States the purchase price of $12m", 3, "essential")
    expect(total).to_have_text("3")
    add_criterion("Cites the letter of intent as the source", 2, "important")
    expect(total).to_have_text("5")
    add_criterion("Invents a price not in the data room", -2, "pitfall")
    expect(page.locator("#criteria tr", has_text="Invents a price")).to_contain_text("-2")
    expect(total).to_have_text("5")
    assert_same_document(page)
    page.screenshot(path=screenshot_dir / "04-task-editor.png", full_page=True)

    # 4. Submit for review. (The letter of intent gets its text here, as drafting would give
    # it — drafting has its own browser test: a pack holds only documents that have content.)
    loi = world.documents.get(path="Deal/Letter of intent.docx")
    authoring_services.document_update(document=loi, user=author, base_revision=loi.revision,
                                       content="# Letter of intent\n\nAcme offers **$12m** for Beta, with 60 days of exclusivity.\n")
    task_url = page.url.split("?")[0]
    page.get_by_role("tab", name="Review").click()
    page.get_by_role("button", name="Submit for review").click()
    expect(page.get_by_role("status").filter(has_text="Version 1 is in the review queue.")).to_be_visible()
    expect(page.locator("#task-status")).to_have_text("In review")
    expect(page.locator("#review-status")).to_contain_text("waiting for a reviewer")
    expect(page.get_by_role("button", name="Submit for review")).to_have_count(0)

    # 5. The reviewer claims it and asks for changes.
    sign_out(page)
    sign_in(page, base, reviewer.username)
    expect(page.locator("#count-queue")).to_have_text("1")
    page.get_by_role("navigation").get_by_role("link", name="Review queue").click()
    expect(page.get_by_role("heading", name=re.compile("Waiting"))).to_contain_text("1")
    expect(page.get_by_role("cell", name="State the purchase price v1")).to_be_visible()
    page.screenshot(path=screenshot_dir / "05-review-queue.png", full_page=True)
    page.get_by_role("button", name="Claim next").click()
    expect(page.get_by_role("heading", name=re.compile("State the purchase price"), level=1)).to_contain_text("v1")
    expect(page.get_by_text("Read the data room and state the purchase price.")).to_be_visible()
    expect(page.get_by_role("heading", name=re.compile("Rubric"))).to_contain_text("5 positive points")
    for text in ("States the purchase price of $12m", "Cites the letter of intent as the source", "Invents a price not in the data room"):
        expect(page.get_by_role("cell", name=text)).to_be_visible()
    expect(page.get_by_role("heading", name="World: Acme acquires Beta")).to_be_visible()
    expect(page.get_by_text("Deal/Letter of intent.docx")).to_be_visible()
    page.screenshot(path=screenshot_dir / "06-submission-review.png", full_page=True)
    feedback = "Ask for the price in words as well, so the judge has something to check."
    answer_checklist(page, fail=(1,))
    page.get_by_label(re.compile("Comment for the author")).fill(feedback)
    page.get_by_role("button", name="Request changes").click()
    expect(page.get_by_role("status").filter(has_text="Changes requested: State the purchase price v1")).to_be_visible()
    expect(page.get_by_role("heading", name="Review queue")).to_be_visible()

    # 6. The author reads the feedback, edits the prompt and resubmits as version 2.
    sign_out(page)
    sign_in(page, base, author.username)
    page.get_by_role("link", name="State the purchase price").click()
    assert page.url.split("?")[0] == task_url
    expect(page.locator("#task-status")).to_have_text("Changes requested")
    page.get_by_role("tab", name="Review").click()
    expect(page.locator("#review-feedback")).to_contain_text(feedback)
    expect(page.locator("#review-feedback")).to_contain_text("rita-reviewer")
    mark_page(page)
    page.get_by_role("tab", name="Prompt & rubric").click()
    page.locator("#task-form").get_by_label("Prompt: what the agent is asked to do").fill(
        "Read the data room and state the purchase price, in figures and in words."
    )
    page.locator("#task-form").get_by_role("button", name="Save task").click()
    expect(page.locator("#task-form").get_by_role("status")).to_have_text("Saved.")
    assert_same_document(page)
    page.get_by_role("tab", name="Review").click()
    page.get_by_role("button", name="Submit for review").click()
    expect(page.get_by_role("status").filter(has_text="Version 2 is in the review queue.")).to_be_visible()
    expect(page.locator("#task-status")).to_have_text("In review")

    # 7. The reviewer claims version 2 and approves it.
    sign_out(page)
    sign_in(page, base, reviewer.username)
    page.get_by_role("navigation").get_by_role("link", name="Review queue").click()
    page.get_by_role("button", name="Claim next").click()
    expect(page.get_by_role("heading", name=re.compile("State the purchase price"), level=1)).to_contain_text("v2")
    expect(page.locator("#submitted-prompt").get_by_text("in figures and in words")).to_be_visible()
    expect(page.locator("#evidence-diff")).to_contain_text("in figures and in words")
    answer_checklist(page)
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status").filter(has_text="Approved: State the purchase price v2")).to_be_visible()

    # 8. The admin builds a pack on the real worker and downloads it.
    sign_out(page)
    sign_in(page, base, admin.username)
    page.get_by_role("link", name=re.compile("Corporate law — M&A")).click()
    page.get_by_role("main").get_by_role("link", name="Packs").click()
    expect(page.get_by_role("heading", name="Packs", level=1)).to_be_visible()
    approved = page.get_by_label("State the purchase price v2")
    expect(approved).to_be_checked()
    page.get_by_label("Pack name").fill("ma-foundation")
    pack_row = page.locator("tr[id^=pack-]", has_text="ma-foundation v1")
    # The build takes well under a second, so the worker is paused (SIGSTOP) until the
    # page has shown the queued pack polling its progress; then it resumes and builds.
    with paused(celery_worker_process):
        page.get_by_role("button", name="Build pack").click()
        expect(pack_row).to_contain_text("Queued")
        mark_page(page)  # the form redirected here; from now on only polling may change the row
        expect(pack_row).to_have_attribute("hx-trigger", "every 2s")
        page.wait_for_event("request", lambda request: "/progress/" in request.url, timeout=5_000)
        expect(pack_row).to_contain_text("Queued")
    expect(pack_row.get_by_text("Ready")).to_be_visible(timeout=PACK_BUILD_TIMEOUT_MS)
    expect(pack_row).to_contain_text("100%")
    expect(pack_row).not_to_have_attribute("hx-trigger", re.compile(".*"))  # done: polling stopped
    assert_same_document(page)
    page.screenshot(path=screenshot_dir / "07-packs.png", full_page=True)

    # The pack's page: its formats, each downloadable on its own, and the checksums.
    pack_row.get_by_role("link", name="ma-foundation v1").click()
    expect(page.get_by_role("heading", name=re.compile("ma-foundation"), level=1)).to_be_visible()
    for label in ("APEX-Agents / Archipelago", "HealthBench-style rubric JSONL", "Inspect AI task folder",
                  "Hugging Face dataset (Parquet + card)", "Taskwright's own format (importable)"):
        expect(page.locator("tr[id^=format-]", has_text=label)).to_be_visible()
    expect(page.get_by_text("first built version")).to_be_visible()
    page.screenshot(path=screenshot_dir / "08-pack-detail.png", full_page=True)
    with page.expect_download() as format_download:
        page.locator("#format-healthbench").get_by_role("link", name="Download this format").click()
    with zipfile.ZipFile(format_download.value.path()) as archive:
        [line] = [json.loads(row) for row in archive.read("healthbench.jsonl").decode().splitlines()]
        assert {item["criterion"]: item["points"] for item in line["rubrics"]} == {
            "States the purchase price of $12m": 3, "Cites the letter of intent as the source": 2,
            "Invents a price not in the data room": -2}

    with page.expect_download() as download_info:
        page.get_by_role("link", name=re.compile("Download all")).click()
    download = download_info.value
    assert download.suggested_filename.endswith(".zip")
    zip_path = download.path()

    with zipfile.ZipFile(zip_path) as archive:
        names = set(archive.namelist())
        world_zip = f"world_files_zipped/world-{world.pk}.zip"
        assert {"manifest.json", "taskwright/tasks.jsonl", "tasks_and_rubrics.json", "verifiers.json", "healthbench.jsonl",
                "inspect/task.py", "hf/tasks.parquet", world_zip} <= names
        lines = [json.loads(line) for line in archive.read("taskwright/tasks.jsonl").decode().splitlines() if line]
        assert len(lines) == 1
        task = lines[0]
        assert task["title"] == "State the purchase price"
        assert task["version"] == 2
        assert task["prompt"] == "Read the data room and state the purchase price, in figures and in words."
        assert task["reference_answer"] == "The price is $12m, per the signed LOI."
        criteria = {c["text"]: c["points"] for c in task["rubric"]["criteria"]}
        assert criteria == {
            "States the purchase price of $12m": 3,
            "Cites the letter of intent as the source": 2,
            "Invents a price not in the data room": -2,
        }
        manifest = json.loads(archive.read("manifest.json"))
        listed = {entry["path"]: entry for entry in manifest["files"]}
        assert set(listed) == names - {"manifest.json"}
        for path, entry in listed.items():
            data = archive.read(path)
            assert hashlib.sha256(data).hexdigest() == entry["sha256"], path
            assert len(data) == entry["bytes"], path
        world_files = zipfile.ZipFile(io.BytesIO(archive.read(world_zip))).namelist()
        assert "filesystem/Deal/Letter of intent.docx" in world_files

    assert console_log.errors == []


def test_member_of_another_project_gets_404_for_its_world(page: Page, live_server, console_log: ConsoleLog) -> None:
    project_a = factories.project("Project A")
    project_b = factories.project("Project B")
    outsider = factories.member(project_a, Role.AUTHOR, username="olga-outsider")
    b_author = factories.member(project_b, Role.AUTHOR)
    world_b = factories.world(project_b, b_author, title="Secret world of B")

    sign_in(page, live_server.url, outsider.username)
    response = page.goto(f"{live_server.url}/worlds/{world_b.pk}/")
    assert response is not None and response.status == 404
    expect(page.get_by_text("Secret world of B")).to_have_count(0)
    expect(page.get_by_role("heading", name=re.compile("not found|404", re.IGNORECASE))).to_be_visible()
    # The browser logs the 404 document itself as a failed resource; nothing else may fail.
    unexpected = [e for e in console_log.errors if "status of 404" not in e]
    assert unexpected == []
