"""Drafting a world through the browser: the fake model server is the endpoint, a real
Celery worker does the work, and the checks are what the author sees.

Suggest skeleton → accept one, then all → Draft all with a live progress bar → a drafted
docx previews, downloads as a real Word file and has its first version → a planted
contradiction is found by the consistency check. And with no model configured, the page
says what to do.
"""

import io
import re
import threading

import docx
import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services
from authoring.drafting_prompts import SKELETON_SYSTEM
from llm.models import ModelEndpoint
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import assert_same_document, mark_page, sign_in
from tests.drafting.conftest import path_of
from tests.fake_llm import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DRAFTING_TIMEOUT_MS = 30_000


def _block(type_, text="", level=0, items=(), header=(), rows=()):
    return {"type": type_, "level": level, "text": text, "items": list(items), "header": list(header), "rows": [list(r) for r in rows]}


DANA = {"name": "Dana Ruiz", "email": "dana@acme.test"}
SAM = {"name": "Sam Lee", "email": "sam@beta.test"}

# What the fake model proposes for the data room, and then drafts for each item.
SKELETON = [
    {"path": "Deal/Letter of intent.docx", "kind": "file", "format": "docx", "brief": "Non-binding LOI: price, exclusivity, closing.",
     "target_size": 400},
    {"path": "Finance/Price build-up.xlsx", "kind": "file", "format": "xlsx", "brief": "Enterprise value to equity price.",
     "target_size": 100},
    {"path": "Mail/Kick-off", "kind": "email", "format": "", "brief": "Dana opens the deal with Sam.", "target_size": 150,
     "metadata": {"date": "2026-01-05T09:00:00+00:00"}},
    {"path": "Board/Deal update.pptx", "kind": "file", "format": "pptx", "brief": "Board update on the terms.", "target_size": 200},
    {"path": "Calendar/Signing", "kind": "event", "format": "", "brief": "The signing meeting.", "target_size": 60},
]
DRAFTS = {
    "Deal/Letter of intent.docx": {"blocks": [
        _block("heading", "Letter of intent", level=1),
        _block("paragraph", "Acme Corp offers to buy Beta Ltd. The purchase price is $12,000,000, payable at closing."),
        _block("bullets", items=["Exclusivity: 60 days", "Closing date: 2026-03-31"]),
    ]},
    "Finance/Price build-up.xlsx": {"sheets": [{"name": "Price", "rows": [
        ["Item", "Amount"], ["Enterprise value", "13500000"], ["Net debt", "-1500000"], ["Equity price", "=SUM(B2:B3)"],
    ], "formats": [{"range": "B2:B4", "number_format": "#,##0"}]}]},
    "Mail/Kick-off": {
        "from": DANA, "to": [SAM], "cc": [], "bcc": [], "date": "2026-01-05T09:00:00+00:00", "subject": "Project Beta kick-off",
        "attachments": [], "body": "Sam,\n\nAs discussed, the purchase price is $12,000,000.\n\nDana",
    },
    "Board/Deal update.pptx": {"title": "Project Beta", "slides": [
        {"title": "Terms", "bullets": ["Price: $12,000,000", "Closing: 2026-03-31"], "notes": "The price is fixed."},
    ]},
    "Calendar/Signing": {
        "subject": "Signing", "start": "2026-03-30T14:00:00+00:00", "end": "2026-03-30T15:00:00+00:00",
        "location": "Acme HQ", "attendees": [DANA, SAM], "description": "Sign the SPA.",
    },
}


def fake_model(fast_drafts: int = 2, fast: float = 0.5, slow: float = 2.5):
    """A responder: the skeleton proposal, then each draft by its path. The first drafts
    answer in `fast` seconds and the rest in `slow`, so a progress poll (every 2 s) lands
    while some documents are done and others are not."""
    lock = threading.Lock()
    drafted = []

    def respond(request):
        messages = request.body.get("messages", [])
        if messages and messages[0].get("content") == SKELETON_SYSTEM:
            return Reply(structured={"items": SKELETON}, input_tokens=900, output_tokens=600)
        path = path_of(request)
        with lock:
            drafted.append(path)
            delay = fast if len(drafted) <= fast_drafts else slow
        if path not in DRAFTS:
            return Reply(status=500, content=f"no draft scripted for {path!r}")
        return Reply(structured=DRAFTS[path], delay=delay, input_tokens=1200, output_tokens=400)

    return respond


def endpoint_on(fake_llm) -> ModelEndpoint:
    # No api_key_env: the worker needs no key in its environment.
    return ModelEndpoint.objects.create(
        name="Fake GPT", kind="openai_compatible", base_url=fake_llm.url, model="fake-model", api_key_env="",
        max_concurrency=4, connect_timeout=2, read_timeout=10, max_retries=1, price_input_per_mtok="1.00", price_output_per_mtok="2.00",
    )


def world_with_outline(project, author):
    return services.world_create(
        project_id=project.pk, user=author, title="Acme acquires Beta",
        outline="Acme Corp is buying **Beta Ltd**. Dana Ruiz (Acme) leads; Sam Lee speaks for Beta.",
        facts=[{"key": "Purchase price", "value": "$12,000,000"}, {"key": "Closing date", "value": "2026-03-31"}],
    )


def test_author_drafts_a_world_with_a_model(
    page: Page, live_server, fake_llm, celery_worker_process, console_log: ConsoleLog, screenshot_dir
) -> None:
    base = live_server.url
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    world = world_with_outline(project, author)
    endpoint_on(fake_llm)
    fake_llm.responder = fake_model()

    # 1. The world has an outline and facts but an empty data room; the drafting panel is there.
    sign_in(page, base, author.username)
    page.goto(f"{base}/worlds/{world.pk}/")
    data_room = page.locator("#data-room")
    expect(data_room.get_by_text("The data room is empty.")).to_be_visible()
    drafting = page.locator("#drafting")
    expect(drafting.get_by_role("heading", name="Draft with a model")).to_be_visible()
    expect(drafting.locator("#skeleton-endpoint")).to_contain_text("Fake GPT · fake-model")
    mark_page(page)

    # 2. Suggest skeleton: the proposal appears by polling once the worker has the answer.
    drafting.get_by_role("button", name="Suggest skeleton").click()
    proposal = page.locator("#skeleton-proposal")
    expect(proposal).to_contain_text("The model is proposing documents")
    for item in SKELETON:
        expect(proposal.locator("tr", has_text=item["path"])).to_be_visible(timeout=DRAFTING_TIMEOUT_MS)
    expect(proposal).to_contain_text("by Fake GPT")
    expect(proposal).not_to_have_attribute("hx-trigger", re.compile(".*"))  # ready: polling stopped
    page.screenshot(path=screenshot_dir / "11-drafting-proposal.png", full_page=True)

    # 3. Accept one item, then all: the data room grows in place.
    first = proposal.locator("tr", has_text="Deal/Letter of intent.docx")
    first.get_by_role("button", name="Accept Deal/Letter of intent.docx").click()
    expect(proposal.locator("tr", has_text="Deal/Letter of intent.docx")).to_contain_text("Accepted")
    expect(data_room.get_by_text("1 document", exact=True)).to_be_visible()
    expect(page.locator("#document-tree tr", has_text="Letter of intent.docx")).to_contain_text("Skeleton")
    proposal.get_by_role("button", name="Accept all").click()
    expect(proposal.get_by_role("button", name=re.compile(r"^Accept (?!all)"))).to_have_count(0)
    expect(proposal.get_by_text("Accepted", exact=True)).to_have_count(len(SKELETON))
    expect(proposal.get_by_role("button", name="Accept all")).to_have_count(0)  # nothing left to accept
    expect(proposal).to_contain_text("Nothing left to accept: every item is accepted, rejected or waits for a fix.")
    expect(data_room.get_by_text(f"{len(SKELETON)} documents")).to_be_visible()
    tree = page.locator("#document-tree")
    for item in SKELETON:
        expect(tree.get_by_role("link", name=item["path"].rpartition("/")[2], exact=True)).to_be_visible()
    assert_same_document(page)

    # 4. Draft all: a progress bar that fills as the worker drafts, then stops polling.
    drafting.get_by_role("button", name="Draft all").click()
    progress = page.locator("#draft-progress")
    bar = progress.get_by_role("progressbar")
    counts = progress.locator("#draft-counts")
    expect(bar).to_have_attribute("aria-valuenow", "0")  # rendered by the request, before any draft is back
    expect(counts).to_contain_text(f"0 done · 0 failed · {len(SKELETON)} remaining")
    expect(progress).to_have_attribute("hx-trigger", "every 2s")
    # Part-way: some documents drafted, some not (the later drafts are slower than a poll).
    expect(bar).to_have_attribute("aria-valuenow", re.compile(r"^[1-9][0-9]?$"), timeout=DRAFTING_TIMEOUT_MS)
    expect(counts).not_to_contain_text(" 0 remaining")
    page.screenshot(path=screenshot_dir / "12-drafting-progress.png", full_page=True)
    expect(bar).to_have_attribute("aria-valuenow", "100", timeout=DRAFTING_TIMEOUT_MS)
    expect(counts).to_contain_text(f"{len(SKELETON)} done · 0 failed · 0 remaining")
    expect(progress).not_to_have_attribute("hx-trigger", re.compile(".*"))
    expect(progress.get_by_role("button", name="Cancel")).to_have_count(0)
    expect(progress.get_by_role("heading", name=re.compile("^Last drafting run"))).to_be_visible()
    # The finished run tells the data room to refresh: every document now reads Drafted.
    expect(tree.locator("span.badge", has_text="Drafted")).to_have_count(len(SKELETON))
    assert_same_document(page)
    page.screenshot(path=screenshot_dir / "13-drafting-done.png", full_page=True)

    # 5. The drafted Word document: preview, real file, first version.
    tree.get_by_role("link", name="Letter of intent.docx", exact=True).click()
    expect(page.get_by_role("heading", name="Deal/Letter of intent.docx", level=1)).to_be_visible()
    preview = page.locator("#preview")
    expect(preview.get_by_role("heading", name="Letter of intent")).to_be_visible()
    expect(preview).to_contain_text("The purchase price is $12,000,000")
    expect(page.locator("#document-form .badge")).to_have_text("Drafted")
    metadata_labels = page.locator("#document-form .grid label[for^=meta-]")
    expect(metadata_labels).to_have_text(["Author"])  # a Word file has no sender, channel or attendees
    page.screenshot(path=screenshot_dir / "14-document-preview.png", full_page=True)

    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download .docx").click()
    download = download_info.value
    assert download.suggested_filename == "Letter of intent.docx"
    with open(download.path(), "rb") as handle:
        word = docx.Document(io.BytesIO(handle.read()))
    assert next((p.style.name, p.text) for p in word.paragraphs) == ("Heading 1", "Letter of intent")
    assert any("The purchase price is $12,000,000" in p.text for p in word.paragraphs)

    page.get_by_role("link", name="Versions (1)").click()
    expect(page.get_by_role("heading", name="Versions of Deal/Letter of intent.docx")).to_be_visible()
    version_row = page.locator("tr", has_text="v1")
    expect(version_row).to_contain_text("Drafted by a model")
    expect(version_row).to_contain_text("Drafted by Fake GPT")
    expect(version_row).to_contain_text("alice-author")
    expect(page.get_by_role("heading", name="Version 1")).to_be_visible()
    page.screenshot(path=screenshot_dir / "15-versions.png", full_page=True)

    # 6. Plant a contradiction by hand; the consistency check finds it and links to it.
    page.get_by_role("link", name="Acme acquires Beta").click()
    add_form = page.locator("#data-room form.add-document")
    add_form.get_by_label("Path").fill("Notes/Side letter.md")
    add_form.get_by_label("Kind").select_option("file")
    add_form.get_by_label("Format").select_option("md")
    add_form.get_by_label("Brief: what this document says").fill("A side letter on the price.")
    add_form.get_by_role("button", name="Add document").click()
    tree.get_by_role("link", name="Side letter.md", exact=True).click()
    editor = page.locator("#document-form")
    editor.get_by_label("Content (markdown)").fill("# Side letter\n\nThe parties agree that the purchase price is $11,500,000.")
    expect(page.locator("#preview").get_by_role("heading", name="Side letter")).to_be_visible()  # the live preview
    editor.get_by_role("button", name="Save document").click()
    expect(page.locator("#document-form").get_by_role("status")).to_have_text("Saved.")

    page.get_by_role("link", name="Acme acquires Beta").click()
    page.get_by_role("button", name="Check consistency").click()
    report = page.locator("#consistency")
    mismatch = report.locator("tbody tr")
    expect(mismatch).to_have_count(1)  # the drafted documents all agree with the facts sheet
    expect(mismatch).to_contain_text("Purchase price")
    expect(mismatch).to_contain_text("$12,000,000")
    expect(mismatch).to_contain_text("$11,500,000")
    page.screenshot(path=screenshot_dir / "16-consistency.png", full_page=True)
    mismatch.get_by_role("link", name="Notes/Side letter.md").click()
    expect(page.get_by_role("heading", name="Notes/Side letter.md", level=1)).to_be_visible()

    assert console_log.errors == []


def test_without_a_model_the_pages_say_how_to_configure_one(page: Page, live_server, console_log: ConsoleLog) -> None:
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    world = world_with_outline(project, author)
    document = services.document_create(world=world, user=author, path="Deal/Letter of intent.docx", brief="The LOI.")
    assert not ModelEndpoint.objects.exists()

    sign_in(page, live_server.url, author.username)
    page.goto(f"{live_server.url}/worlds/{world.pk}/")
    notice = page.locator("#no-endpoint")
    expect(notice).to_contain_text("No model is configured yet.")
    expect(notice).to_contain_text("A site admin adds one on the Models page")
    expect(page.get_by_role("button", name="Suggest skeleton")).to_have_count(0)
    expect(page.get_by_role("button", name="Draft all")).to_have_count(0)

    page.goto(f"{live_server.url}/documents/{document.pk}/")
    expect(page.locator("#document-drafting")).to_contain_text("No model is configured.")
    expect(page.get_by_role("button", name="Draft", exact=True)).to_have_count(0)
    page.locator("#document-drafting").get_by_role("link", name="Models").click()
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    assert console_log.errors == []
