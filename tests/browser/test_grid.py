"""The spreadsheet grid through the browser, the CSP on: open a spreadsheet document, change a
value a formula depends on and then the formula itself, see the computed values follow, save,
download the xlsx and read the new cached value with openpyxl (data_only=True). A reviewer
sees the same grid read-only."""

import re

import openpyxl
import pytest
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services
from authoring.rendering.grid import grid_evaluate, grid_from_content
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import assert_same_document, mark_page, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PRICE = """## Sheet: Price
|   | A | B |
|---|---|---|
| 1 | Item | Amount |
| 2 | Enterprise value | 13500000 |
| 3 | Net debt | -1500000 |
| 4 | Equity price | =SUM(B2:B3) |
Formats: B2:B4 #,##0

## Sheet: Terms
|   | A | B |
|---|---|---|
| 1 | Escrow | 10% |
| 2 | Escrow amount | =Price!B4*B1 |
Formats: B2 "$"#,##0.00
"""


@pytest.fixture(autouse=True)
def _formula_engine_loaded() -> None:
    # The formula engine's first use in a process loads its function tables (seconds on a busy
    # machine); the live server shares this process, so load them before the page's 10 s timeout.
    grid_evaluate(grid_from_content(PRICE))


def test_grid_round_trip_edit_compute_save_download(page: Page, live_server, console_log: ConsoleLog, screenshot_dir) -> None:
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="dana")
    reviewer = factories.member(project, Role.REVIEWER, username="rita")
    world = factories.world(project, author, documents=0)
    doc = services.document_create(world=world, user=author, path="Finance/Price build-up.xlsx", format="xlsx", content=PRICE)
    base = live_server.url

    sign_in(page, base, "dana")
    page.goto(f"{base}/documents/{doc.pk}/")
    mark_page(page)
    grid = page.locator("#grid")
    b4 = grid.get_by_label("Price cell B4", exact=True)
    expect(b4).to_have_value("12,000,000")
    expect(grid.get_by_role("status")).to_contain_text("All values computed")
    page.screenshot(path=screenshot_dir / "grid-01-opened.png", full_page=True)

    # A value the SUM depends on: the total and the other sheet's escrow follow.
    b3 = grid.get_by_label("Price cell B3", exact=True)
    b3.click()
    expect(b3).to_have_value("-1500000")  # editing shows what was typed
    b3.fill("-2500000")
    b3.press("Enter")  # moves down to B4, like a spreadsheet; does not submit the form
    expect(b4).to_be_focused()
    expect(grid.locator("[data-grid-formula]")).to_have_value("=SUM(B2:B3)")  # the formula bar shows the formula
    expect(b3).to_have_value("-2,500,000")
    expect(b4).to_have_attribute("data-shown", "11,000,000")

    # The formula itself, typed in the cell.
    b4.fill("=SUM(B2:B3)*2")
    b4.press("Tab")
    expect(b4).to_have_value("22,000,000")
    grid.get_by_role("tab", name="Terms").click()
    expect(grid.get_by_label("Terms cell B2", exact=True)).to_have_value("$2,200,000.00")
    grid.get_by_role("tab", name="Price").click()

    # A formula that cannot be computed is marked and explained; fixing it clears the mark.
    a4 = grid.get_by_label("Price cell A4", exact=True)
    grid.get_by_label("Price cell B2", exact=True).click()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowLeft")
    expect(grid.get_by_label("Price cell A2", exact=True)).to_be_focused()
    a4.fill("=NOPE(1)")
    a4.press("Enter")
    expect(grid.locator(".grid-errors")).to_contain_text("NOPE(), which is not an Excel function")
    expect(a4).to_be_focused()  # the last row: Enter stays, showing what was typed
    expect(a4).to_have_value("=NOPE(1)")
    a4.press("Tab")
    expect(a4).to_have_value("#ERROR")
    expect(a4).to_have_attribute("aria-invalid", "true")
    page.screenshot(path=screenshot_dir / "grid-02-formula-error.png", full_page=True)
    a4.click()
    expect(a4).to_have_value("=NOPE(1)")  # editing a cell shows its formula
    page.keyboard.press("Control+a")
    page.keyboard.type("Equity price")
    a4.press("Enter")
    expect(grid.locator(".grid-errors")).not_to_contain_text("NOPE")
    expect(grid.locator(".grid-errors li")).to_have_count(0)

    # A number format on a range chosen by shift-click.
    grid.get_by_label("Price cell B2", exact=True).click()
    grid.get_by_label("Price cell B4", exact=True).click(modifiers=["Shift"])
    expect(grid.locator("[data-grid-range]")).to_have_text("B2:B4")
    grid.get_by_label("Number format of").select_option(label="Thousands, two decimals: 1,234.50")
    expect(b4).to_have_value("22,000,000.00")
    expect(grid.locator("#grid-sheet-0 .grid-format-chip")).to_have_text(["B2:B4 #,##0.00 remove"])  # replaces the old one
    page.screenshot(path=screenshot_dir / "grid-03-edited.png", full_page=True)

    # The text form follows the grid; saving goes through the document form.
    page.get_by_text("Text form:").click()
    expect(page.locator("#id_content")).to_have_value(re.compile(r"\| 4 \| Equity price \| =SUM\(B2:B3\)\*2 \|"))
    page.get_by_role("button", name="Save document").click()
    expect(page.locator("#document-form")).to_contain_text("Saved.")
    assert_same_document(page)
    expect(page.locator("#grid").get_by_label("Price cell B4", exact=True)).to_have_value("22,000,000.00")
    doc.refresh_from_db()
    assert "=SUM(B2:B3)*2" in doc.content and "B2:B4 #,##0.00" in doc.content

    with page.expect_download() as download_info:
        page.locator("#download-file").click()
    download = download_info.value
    assert download.suggested_filename == "Price build-up.xlsx"
    with open(download.path(), "rb") as handle:
        book = openpyxl.load_workbook(handle, data_only=True)
    assert book["Price"]["B4"].value == 22_000_000
    assert book["Price"]["B4"].number_format == "#,##0.00"
    assert book["Terms"]["B2"].value == pytest.approx(2_200_000)
    page.screenshot(path=screenshot_dir / "grid-04-saved.png", full_page=True)

    # A reviewer sees the same values, read-only.
    page.context.clear_cookies()  # signed out (the sign-out button lives in a menu)
    sign_in(page, base, reviewer.username)
    page.goto(f"{base}/documents/{doc.pk}/")
    cell = page.locator("#grid").get_by_label("Price cell B4", exact=True)
    expect(cell).to_have_value("22,000,000.00")
    expect(cell).to_have_attribute("readonly", "")
    cell.click()
    expect(cell).to_have_value("=SUM(B2:B3)*2")
    expect(page.get_by_role("button", name="Save document")).to_have_count(0)
    page.screenshot(path=screenshot_dir / "grid-05-reviewer.png", full_page=True)
    assert console_log.errors == []


def test_grid_sheets_paste_and_stale_save(page: Page, live_server, console_log: ConsoleLog, screenshot_dir) -> None:
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="dana")
    world = factories.world(project, author, documents=0)
    doc = services.document_create(world=world, user=author, path="Finance/Price build-up.xlsx", format="xlsx", content=PRICE)
    base = live_server.url
    sign_in(page, base, "dana")
    page.goto(f"{base}/documents/{doc.pk}/")
    grid = page.locator("#grid")

    # A new sheet, renamed, with a block pasted from another spreadsheet.
    grid.get_by_role("button", name="Add sheet").click()
    name = grid.get_by_label("Sheet name").locator("visible=true")
    name.fill("Fees")
    name.press("Enter")
    expect(grid.get_by_role("tab", name="Fees")).to_have_attribute("aria-selected", "true")
    a1 = grid.get_by_label("Fees cell A1", exact=True)
    a1.click()
    page.evaluate("""() => {
      const data = new DataTransfer();
      data.setData("text/plain", "Adviser\\tFee\\nBank\\t250000\\nLawyers\\t=Price!B4/100\\n");
      document.activeElement.dispatchEvent(new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true}));
    }""")
    expect(grid.get_by_label("Fees cell B3", exact=True)).to_have_value("120,000")
    page.screenshot(path=screenshot_dir / "grid-06-new-sheet-paste.png", full_page=True)

    # Someone else saves meanwhile: this save is refused, and what was typed stays on screen.
    services.document_update(document=doc, user=author, base_revision=doc.revision, brief="changed elsewhere")
    page.get_by_role("button", name="Save document").click()
    expect(page.locator("#document-form")).to_contain_text("since you opened it")
    expect(page.locator("#grid").get_by_role("tab", name="Fees")).to_be_visible()
    doc.refresh_from_db()
    assert "Fees" not in doc.content
    page.screenshot(path=screenshot_dir / "grid-07-stale-save.png", full_page=True)
    assert [e for e in console_log.errors if "409 (Conflict)" not in e] == []  # the refusal is a 409, by design
