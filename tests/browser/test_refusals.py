"""A refused permission in the browser: the 403 fragment is swapped in like any other
rule's message, so the user reads why, and the page is not reloaded."""

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Membership, Role
from accounts.services import membership_set
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import assert_same_document, mark_page, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_refusal_shows_its_reason_where_the_form_was(page: Page, live_server, console_log: ConsoleLog) -> None:
    project = factories.project("Refusals")
    author = factories.member(project, Role.AUTHOR, username="rhea-role")
    env_task = factories.env_task(factories.world(project, author), author)

    sign_in(page, live_server.url, author.username)
    page.goto(f"{live_server.url}/tasks/{env_task.pk}/")
    mark_page(page)
    # An admin makes the author a reviewer while the page is open.
    membership_set(project=project, user=author, role=Role.REVIEWER)
    assert Membership.objects.get(project=project, user=author).role == Role.REVIEWER

    page.locator("#new-criterion-text").fill("Names the lender")
    with page.expect_response(lambda r: r.url.endswith(f"/tasks/{env_task.pk}/criteria/new/")) as answer:
        page.get_by_role("button", name="Add criterion").click()
    assert answer.value.status == 403
    alert = page.locator("#rubric [role=alert]")
    expect(alert).to_contain_text("Not saved. Your role in this project (reviewer) cannot edit content.")
    expect(page.locator("#request-error")).to_be_hidden()  # the generic "reload and sign in" box stays shut
    assert_same_document(page)
    assert not env_task.rubric_versions.get().criteria.filter(text="Names the lender").exists()
    # The browser logs the refused request as a failed resource; nothing else may fail.
    assert [e for e in console_log.errors if "status of 403" not in e] == []
