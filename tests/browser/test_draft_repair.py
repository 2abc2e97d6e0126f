"""Draft all through the browser when the model's drafts do not all build into files: a
real Celery worker, the fake model server answering with broken drafts.

A spreadsheet whose first draft has a `Formats:` line the parser rejects is repaired (the
error goes back to the model) and downloads as an xlsx openpyxl reads; a chat message first
dated without a UTC offset is repaired too; a spreadsheet broken on every try fails, the
run says "3 done · 1 failed", the data room says Failed with the reason and a Retry, and
the Retry drafts it once the model answers right.
"""

import copy
import io
import threading
from collections import Counter

import openpyxl
import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_drafting import DANA, DRAFTS, endpoint_on, world_with_outline
from tests.browser.test_journey import sign_in
from tests.drafting.conftest import path_of
from tests.fake_llm import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TIMEOUT_MS = 45_000
LOI, CAP, BUDGET, CHAT = "Deal/Letter of intent.docx", "Finance/Price build-up.xlsx", "Finance/Budget.xlsx", "Chat/deal-team/Price"
GOOD_SHEET = DRAFTS[CAP]
BROKEN_SHEET = copy.deepcopy(GOOD_SHEET)
BROKEN_SHEET["sheets"][0]["formats"] = [{"range": "Price!B2:B4", "number_format": "#,##0"}]
CHAT_DRAFT = {"channel": "deal-team", "from": DANA, "date": "2026-01-06T10:15:00", "text": "Board approved the $12,000,000 price."}


def fake_model(fixed: set[str]):
    """Drafts by path: the price build-up and the chat message are broken on their first
    try only; the budget is broken until its path is put in `fixed`."""
    lock = threading.Lock()
    tries: Counter = Counter()

    def respond(request):
        path = path_of(request)
        with lock:
            tries[path] += 1
            n = tries[path]
        if path == LOI:
            return Reply(structured=DRAFTS[LOI], delay=0.3)
        if path == CAP:
            return Reply(structured=BROKEN_SHEET if n == 1 else GOOD_SHEET, delay=0.3)
        if path == CHAT:
            return Reply(structured=CHAT_DRAFT if n == 1 else {**CHAT_DRAFT, "date": "2026-01-06T10:15:00+00:00"}, delay=0.3)
        if path == BUDGET:
            return Reply(structured=GOOD_SHEET if BUDGET in fixed else BROKEN_SHEET, delay=0.3)
        return Reply(status=500, content=f"no draft scripted for {path!r}")

    return respond


def test_draft_all_repairs_what_it_can_and_fails_the_rest_honestly(
    page: Page, live_server, fake_llm, celery_worker_process, console_log: ConsoleLog, screenshot_dir
) -> None:
    base = live_server.url
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    world = world_with_outline(project, author)
    for path, kind in ((LOI, "file"), (CAP, "file"), (BUDGET, "file"), (CHAT, "chat")):
        services.document_create(world=world, user=author, path=path, kind=kind, brief=f"The {path.rpartition('/')[2]}.",
                                 metadata={"channel": "deal-team"} if kind == "chat" else {})
    endpoint_on(fake_llm)
    fixed: set[str] = set()
    fake_llm.responder = fake_model(fixed)

    sign_in(page, base, author.username)
    page.goto(f"{base}/worlds/{world.pk}/")
    page.locator("#drafting").get_by_role("button", name="Draft all").click()
    progress = page.locator("#draft-progress")
    expect(progress.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "100", timeout=TIMEOUT_MS)
    counts = progress.locator("#draft-counts")
    expect(counts).to_contain_text("3 done · 1 failed · 0 remaining")
    failed = progress.locator("li", has_text=BUDGET)
    expect(failed).to_contain_text("could not be built into a spreadsheet (.xlsx) after 3 tries")
    expect(failed).to_contain_text("a Formats line")

    tree = page.locator("#document-tree")
    budget_row = tree.locator("tr", has_text="Budget.xlsx")
    expect(budget_row.locator(".badge")).to_have_text("Failed")
    expect(budget_row.locator(".draft-reason")).to_contain_text("a Formats line lists 'RANGE FORMAT' pairs")
    expect(budget_row.get_by_role("button", name="Retry drafting Finance/Budget.xlsx")).to_be_visible()
    for name in ("Letter of intent.docx", "Price build-up.xlsx", "Price"):
        expect(tree.locator("tr", has=page.get_by_role("link", name=name, exact=True)).locator(".badge")).to_have_text("Drafted")
    page.screenshot(path=screenshot_dir / "17-draft-repair-failed.png", full_page=True)
    budget_row.scroll_into_view_if_needed()
    budget_row.screenshot(path=screenshot_dir / "17-draft-repair-failed-row.png")

    # The model now answers right: Retry from the data room drafts it, the run's panel follows.
    fixed.add(BUDGET)
    budget_row.get_by_role("button", name="Retry drafting Finance/Budget.xlsx").click()
    expect(tree.locator("tr", has_text="Budget.xlsx").locator(".badge")).to_have_text("Drafted", timeout=TIMEOUT_MS)
    expect(counts).to_contain_text("4 done · 0 failed · 0 remaining")
    expect(tree.locator(".draft-reason")).to_have_count(0)
    page.screenshot(path=screenshot_dir / "18-draft-repair-retried.png", full_page=True)

    # The repaired spreadsheet downloads as a real xlsx with its formula's value.
    # (the editor previews the sheet with its formulas computed: slow on a busy machine)
    tree.get_by_role("link", name="Price build-up.xlsx", exact=True).click(timeout=TIMEOUT_MS)
    with page.expect_download(timeout=TIMEOUT_MS) as download_info:
        page.get_by_role("link", name="Download .xlsx").click(timeout=TIMEOUT_MS)
    with open(download_info.value.path(), "rb") as handle:
        book = openpyxl.load_workbook(io.BytesIO(handle.read()), data_only=True)
    assert book["Price"]["B4"].value == 12_000_000
    assert console_log.errors == []
