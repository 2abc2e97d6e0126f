"""Issue 17 in the browser: a site admin presses "Test connection" on the Models page and the
row shows the result as it comes (polled with htmx): OK with the latency, or the status and
the provider's short reason. (Tasks run eagerly here; tests/llm/test_endpoint_ux.py checks
that the web request itself only queues the call.)"""

import pytest
from playwright.sync_api import Page, expect

from llm.models import EndpointCheck, EndpointCheckStatus
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import sign_in
from tests.fake_llm import Reply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_site_admin_tests_a_connection_and_reads_the_result_in_the_row(page: Page, live_server, fake_llm, endpoint, eager,
                                                                        console_log: ConsoleLog, screenshot_dir) -> None:
    admin = factories.user("sam-siteadmin")
    admin.is_staff = True
    admin.save(update_fields=["is_staff"])
    base = live_server.url
    sign_in(page, base, admin.username)
    page.goto(f"{base}/models/")
    cell = page.locator(f"#endpoint-check-{endpoint.pk}")
    expect(cell).to_contain_text("Not tested yet.")
    expect(page.locator("#endpoints")).to_contain_text("connect 2 s · read 2 s")
    expect(page.get_by_label("Read timeout (seconds)")).to_be_visible()

    fake_llm.script(Reply(content="OK"))
    cell.get_by_role("button", name=f"Test connection to {endpoint.name}").click()
    expect(cell).to_contain_text("✓ OK: answered in", timeout=20_000)
    assert EndpointCheck.objects.get().status == EndpointCheckStatus.OK
    page.screenshot(path=screenshot_dir / "174-models-test-connection-ok.png", full_page=False)

    fake_llm.responder = lambda request: Reply(status=404, raw=b'{"error": {"message": "The model fake-model does not exist"}}',
                                               headers={"content-type": "application/json"})
    cell.get_by_role("button", name=f"Test connection to {endpoint.name}").click()
    failed = "✗ Failed: The endpoint rejected the request (HTTP 404: The model fake-model does not exist)."
    expect(cell).to_contain_text(failed, timeout=20_000)
    page.screenshot(path=screenshot_dir / "175-models-test-connection-failed.png", full_page=False)
    assert console_log.errors == []


def test_an_author_reads_who_can_add_a_model(page: Page, live_server, endpoint, console_log: ConsoleLog, screenshot_dir) -> None:
    admin = factories.user("sam-siteadmin")
    admin.is_staff = True
    admin.save(update_fields=["is_staff"])
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, username="ada-author")
    base = live_server.url
    sign_in(page, base, author.username)
    page.goto(f"{base}/models/")
    expect(page.locator("#who-adds-models")).to_contain_text(
        "Only a site admin can add or change model endpoints. Ask a site admin (sam-siteadmin)"
    )
    expect(page.get_by_role("button", name="Test connection")).to_have_count(0)
    page.screenshot(path=screenshot_dir / "176-models-author.png", full_page=False)
    assert console_log.errors == []
