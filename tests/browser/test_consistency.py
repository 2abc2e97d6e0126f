"""The consistency check in the browser, on a copy of the demo world with three planted
contradictions (a price, a date, a party name): the author asks for the check and reads
each contradiction with both passages side by side, the differing values highlighted."""

import shutil
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from accounts.models import Project
from demo.content import DATA_DIR
from tests import factories
from tests.authoring.test_consistency_typed import plant_contradictions
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_author_reads_the_planted_contradictions_side_by_side(
    page: Page, live_server, settings, tmp_path, console_log: ConsoleLog, screenshot_dir
) -> None:
    settings.VAR_DIR = tmp_path
    settings.MEDIA_ROOT = tmp_path / "media"
    copy = tmp_path / "planted"
    shutil.copytree(DATA_DIR, copy)
    plant_contradictions(copy)
    call_command("seed_demo", "--data", str(copy), stdout=StringIO())
    world = Project.objects.get(slug="corporate-law-ma").worlds.get()
    author = world.project.memberships.get(role="author").user
    author.set_password(factories.PASSWORD)  # the demo's generated password is not needed here
    author.save(update_fields=["password"])

    sign_in(page, live_server.url, author.username)
    page.goto(f"{live_server.url}/worlds/{world.pk}/")
    page.get_by_role("button", name="Check consistency").click()
    report = page.locator("#consistency")
    expect(report.get_by_role("status")).to_contain_text("3 contradictions found")
    expect(report).to_contain_text("in 7 documents")
    rows = report.locator("table.consistency-findings tbody tr")
    expect(rows).to_have_count(3)

    price = rows.filter(has=page.get_by_role("rowheader", name="Price", exact=True))
    expect(price.locator("td").nth(0)).to_contain_text("Facts sheet")
    expect(price.locator("td").nth(0).locator("mark")).to_have_text("$48,000,000")
    expect(price.locator("td").nth(1).get_by_role("link")).to_have_text("Deal/Letter of intent.docx")
    expect(price.locator("td").nth(1).locator("mark")).to_have_text("US$45,000,000")
    expect(rows.filter(has_text="Signing date").locator("td").nth(1).locator("mark")).to_have_text("22 March 2026")
    expect(rows.filter(has_text="Buyer").locator("td").nth(1).locator("mark")).to_have_text("Acme Holdings Inc.")

    # side by side: the two passages of a finding sit next to each other on a wide screen
    left, right = price.locator("td").nth(0).bounding_box(), price.locator("td").nth(1).bounding_box()
    assert left and right and right["x"] >= left["x"] + left["width"] - 1 and abs(right["y"] - left["y"]) < 2
    report.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "consistency-planted.png", full_page=True)
    report.screenshot(path=screenshot_dir / "consistency-planted-panel.png")

    # what was checked, and the finding's link opens the document
    report.get_by_text("What was checked").click()
    expect(report.locator(".consistency-checked")).to_contain_text("Governing law: England and Wales")
    price.locator("td").nth(1).get_by_role("link", name="Deal/Letter of intent.docx").click()
    expect(page.get_by_role("heading", name="Deal/Letter of intent.docx", level=1)).to_be_visible()
    assert console_log.errors == []
