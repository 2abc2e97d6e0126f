"""The spreadsheet grid (Tabulator, static/vendor/tabulator/) through the browser, the CSP on:
open a spreadsheet document, check it with axe-core, change a value a formula depends on and then
the formula itself by keyboard, see the computed values follow, format a range, add a sheet and
paste a block into it, save, download the xlsx and read the new cached values with openpyxl
(data_only=True); a stale save is refused; a reviewer sees the same grid read-only.

One page load per user for all of it: the suite is over its time budget."""

import re

import openpyxl
import pytest
from playwright.sync_api import Locator, Page, expect

from accounts.models import Role
from authoring import services
from authoring.rendering.grid import grid_evaluate, grid_from_content
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_accessibility import AXE, axe_check, sideways_overflow
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


def cell(page: Page, ref: str) -> Locator:
    """A cell of the sheet on show, by its reference (the grid paints data-ref on each)."""
    return page.locator(f"#grid [role=tabpanel]:not([hidden]) [role=gridcell][data-ref='{ref}']")


def type_into(page: Page, ref: str, text: str, key: str = "Enter") -> None:
    """Select a cell with the mouse, then edit it by keyboard: typing replaces what it holds."""
    cell(page, ref).click()
    page.keyboard.type(text)
    page.keyboard.press(key)


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
    formula = grid.locator("[data-grid-formula]")
    expect(grid.get_by_role("grid", name="Price")).to_be_visible()
    expect(cell(page, "B4")).to_have_text("12,000,000")
    expect(grid.get_by_role("status")).to_contain_text("All values computed")
    assert axe_check(page, AXE.read_text()) == []  # the editor page as served, the grid built
    page.set_viewport_size({"width": 320, "height": 800})
    assert sideways_overflow(page) == 0  # the grid scrolls inside itself (WCAG 1.4.10)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=screenshot_dir / "grid-01-opened.png", full_page=True)

    # A value the SUM depends on, typed over: the total and the other sheet's escrow follow.
    cell(page, "B3").click()
    expect(formula).to_have_value("-1500000")  # the formula bar shows what the cell holds
    page.keyboard.type("-2500000")
    expect(grid.get_by_label("Price cell B3")).to_have_value("-2500000")  # the cell's editor, labelled
    page.keyboard.press("Enter")  # keeps it and moves down to B4, like a spreadsheet; does not submit the form
    expect(cell(page, "B4")).to_be_focused()
    expect(formula).to_have_value("=SUM(B2:B3)")
    expect(cell(page, "B3")).to_have_text("-2,500,000")
    expect(cell(page, "B4")).to_have_text("11,000,000")

    # The formula itself, edited in the cell (F2 keeps what it holds).
    page.keyboard.press("F2")
    editor = grid.get_by_label("Price cell B4")
    expect(editor).to_have_value("=SUM(B2:B3)")
    editor.fill("=SUM(B2:B3)*2")
    editor.press("Tab")
    expect(cell(page, "B4")).to_have_text("22,000,000")
    grid.get_by_role("tab", name="Terms").click()
    expect(cell(page, "B2")).to_have_text("$2,200,000.00")
    grid.get_by_role("tab", name="Price").click()

    # Keyboard: arrows move, Home goes to the row's start, Tab leaves the sheet (no trap).
    cell(page, "B2").click()
    page.keyboard.press("ArrowLeft")
    expect(cell(page, "A2")).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Home")
    expect(cell(page, "A3")).to_be_focused()
    page.keyboard.press("Tab")
    assert page.evaluate("!document.activeElement.closest('.tabulator')")
    page.keyboard.press("Shift+Tab")
    expect(cell(page, "A3")).to_be_focused()  # the one cell in the tab order is the selected one

    # A formula that cannot be computed is marked and explained; fixing it clears the mark.
    type_into(page, "A4", "=NOPE(1)")
    expect(grid.locator(".grid-errors")).to_contain_text("NOPE(), which is not an Excel function")
    expect(cell(page, "A4")).to_be_focused()  # the last row: Enter stays
    expect(cell(page, "A4")).to_have_text("#ERROR")
    expect(cell(page, "A4")).to_have_attribute("aria-invalid", "true")
    page.screenshot(path=screenshot_dir / "grid-02-formula-error.png", full_page=True)
    page.keyboard.press("Enter")
    expect(grid.get_by_label("Price cell A4")).to_have_value("=NOPE(1)")  # editing a cell shows its formula
    page.keyboard.press("Escape")  # undoes the edit
    expect(cell(page, "A4")).to_have_text("#ERROR")
    type_into(page, "A4", "Equity price")
    expect(grid.locator(".grid-errors li")).to_have_count(0)
    expect(cell(page, "A4")).not_to_have_attribute("aria-invalid", "true")

    # A number format on a range chosen by shift-click.
    cell(page, "B2").click()
    cell(page, "B4").click(modifiers=["Shift"])
    expect(grid.locator("[data-grid-range]")).to_have_text("B2:B4")
    grid.get_by_label("Number format of").select_option(label="Thousands, two decimals: 1,234.50")
    expect(cell(page, "B4")).to_have_text("22,000,000.00")
    expect(grid.locator("#grid-sheet-0 .grid-format-chip")).to_have_text(["B2:B4 #,##0.00 remove"])  # replaces the old one
    page.screenshot(path=screenshot_dir / "grid-03-edited.png", full_page=True)

    # A new sheet, renamed, with a block pasted from another spreadsheet: the sheet grows to take it.
    grid.get_by_role("button", name="Add sheet").click()
    name = grid.get_by_label("Sheet name").locator("visible=true")
    name.fill("Fees")
    name.press("Enter")
    expect(grid.get_by_role("tab", name="Fees")).to_have_attribute("aria-selected", "true")
    cell(page, "D9").click()
    page.evaluate("""() => {
      const data = new DataTransfer();
      data.setData("text/plain", "Adviser\\tFee\\nBank\\t250000\\nLawyers\\t=Price!B4/100\\n");
      document.activeElement.dispatchEvent(new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true}));
    }""")
    expect(cell(page, "E11")).to_have_text("220,000")
    expect(cell(page, "E10")).to_have_text("250,000")
    page.screenshot(path=screenshot_dir / "grid-06-new-sheet-paste.png", full_page=True)

    # The text form follows the grid; saving goes through the document form.
    page.get_by_text("Text form:").click()
    expect(page.locator("#id_content")).to_have_value(re.compile(r"\| 4 \| Equity price \| =SUM\(B2:B3\)\*2 \|"))
    page.get_by_role("button", name="Save document").click()
    expect(page.locator("#document-form")).to_contain_text("Saved.")
    assert_same_document(page)
    expect(cell(page, "B4")).to_have_text("22,000,000.00")  # the re-rendered grid, first sheet on show
    doc.refresh_from_db()
    assert "=SUM(B2:B3)*2" in doc.content and "B2:B4 #,##0.00" in doc.content and "## Sheet: Fees" in doc.content

    with page.expect_download() as download_info:
        page.locator("#download-file").click()
    download = download_info.value
    assert download.suggested_filename == "Price build-up.xlsx"
    with open(download.path(), "rb") as handle:
        book = openpyxl.load_workbook(handle, data_only=True)
    assert book["Price"]["B4"].value == 22_000_000
    assert book["Price"]["B4"].number_format == "#,##0.00"
    assert book["Terms"]["B2"].value == pytest.approx(2_200_000)
    assert book["Fees"]["E11"].value == pytest.approx(220_000)
    page.screenshot(path=screenshot_dir / "grid-04-saved.png", full_page=True)

    # Someone else saves meanwhile: this save is refused, and what was typed stays on screen.
    services.document_update(document=doc, user=author, base_revision=doc.revision, brief="changed elsewhere")
    type_into(page, "A1", "Line item")
    page.get_by_role("button", name="Save document").click()
    expect(page.locator("#document-form")).to_contain_text("since you opened it")
    expect(cell(page, "A1")).to_have_text("Line item")
    doc.refresh_from_db()
    assert "Line item" not in doc.content
    page.screenshot(path=screenshot_dir / "grid-07-stale-save.png", full_page=True)

    # A reviewer sees the same values, read-only: selecting shows the formula, nothing edits.
    page.context.clear_cookies()  # signed out (the sign-out button lives in a menu)
    sign_in(page, base, reviewer.username)
    page.goto(f"{base}/documents/{doc.pk}/")
    expect(cell(page, "B4")).to_have_text("22,000,000.00")
    cell(page, "B4").click()
    expect(formula).to_have_value("=SUM(B2:B3)*2")
    expect(formula).to_have_attribute("readonly", "")
    page.keyboard.press("Enter")
    page.keyboard.type("9")
    expect(grid.locator(".grid-cell-editor")).to_have_count(0)
    expect(page.get_by_role("button", name="Save document")).to_have_count(0)
    page.screenshot(path=screenshot_dir / "grid-05-reviewer.png", full_page=True)
    assert [e for e in console_log.errors if "409 (Conflict)" not in e] == []  # the refusal is a 409, by design
