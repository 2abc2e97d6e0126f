"""Issue 16's must-show, through the browser: the author is blocked by a gate (a flagged
reward-hacking probe left unexplained), fixes it by explaining the probe, and submits; two
reviewers review with the checklist and disagree; the admin, told by a notification,
adjudicates with both reviews in view; the pack then includes the task; and the task's audit
trail shows every step. The project, its people, the task and the rows its trials and probe
run left are made up front; everything else is clicked."""

import re

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from accounts.models import Role
from authoring import services as authoring_services
from reviews.models import ReviewPolicy
from rollouts.models import Grade, GradeStatus, ProbeAnswer, ProbeRun, Rollout, RolloutBatch, RolloutStatus
from tests import factories
from tests.browser.conftest import ConsoleLog
from tests.browser.test_journey import PACK_BUILD_TIMEOUT_MS, answer_checklist, sign_in, sign_out

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def task_with_evidence(project, author):
    """A task whose trials were graded (3 of 8 passed) and whose probe run flagged one probe."""
    world = factories.world(project, author, title="Acme acquires Beta", documents=2, drafted=True)
    env_task = factories.env_task(world, author, title="State the purchase price")
    rubric = env_task.rubric_versions.get()
    authoring_services.rubric_version_freeze(rubric_version=rubric)  # graded versions are frozen
    batch = RolloutBatch.objects.create(env_task=env_task, project_id=project.pk, rubric_version=rubric, endpoint_name="scripted",
                                        endpoint_scripted=True, n=8, task_snapshot={"title": env_task.title, "prompt": env_task.prompt,
                                        "deliverable_kind": env_task.deliverable_kind, "revision": env_task.revision})
    for i in range(8):
        rollout = Rollout.objects.create(batch=batch, index=i, status=RolloutStatus.COMPLETED, final_answer="The price is $12m.")
        Grade.objects.create(rollout=rollout, rubric_version=rubric, status=GradeStatus.GRADED, passed=i % 3 == 0,
                             score=1.0 if i % 3 == 0 else 0.4, met_points=9 if i % 3 == 0 else 4, positive_points=9,
                             graded_at=timezone.now())
    run = ProbeRun.objects.create(env_task=env_task, rubric_version=rubric, created_by=author)
    probe = ProbeAnswer.objects.create(run=run, kind="keyword_echo", label="Keyword echo", answer="Price. Purchase price. $12m.")
    Grade.objects.create(probe=probe, rubric_version=rubric, status=GradeStatus.GRADED, passed=True, score=1.0, met_points=9,
                         positive_points=9, graded_at=timezone.now())
    return env_task


def test_gate_two_reviewers_disagree_admin_adjudicates_pack_and_audit(page: Page, live_server, celery_worker_process,
                                                                      console_log: ConsoleLog, screenshot_dir) -> None:
    base = live_server.url
    project = factories.project("Corporate law — M&A")
    author = factories.member(project, Role.AUTHOR, username="alice-author")
    rita = factories.member(project, Role.REVIEWER, username="rita-reviewer")
    ravi = factories.member(project, Role.REVIEWER, username="ravi-reviewer")
    admin = factories.member(project, Role.ADMIN, username="adam-admin")
    ReviewPolicy.objects.create(project=project, approvals_required=2, gate_probes=True)
    env_task = task_with_evidence(project, author)
    shots = screenshot_dir / "review-policy"
    shots.mkdir(exist_ok=True)

    # 1. The author tries to submit: the probe gate blocks, saying which gate and what to do.
    sign_in(page, base, author.username)
    page.goto(f"{base}/tasks/{env_task.pk}/?tab=review")
    panel = page.locator("#review-status")
    expect(panel.locator("#gate-probes")).to_contain_text("Not met")
    expect(panel.locator("#gate-probes")).to_contain_text("1 flagged, 1 unexplained")
    panel.get_by_label("Note for the reviewers (optional)").fill("The probe is discussed below.")
    panel.get_by_role("button", name="Submit for review").click()
    expect(page.locator("#review-status [role=alert]")).to_contain_text("Not yet: Reward-hacking probes run, every flagged one explained")
    expect(page.locator("#review-status [role=alert]")).to_contain_text("explain each flagged probe below")
    page.screenshot(path=shots / "01-blocked-by-the-probe-gate.png", full_page=True)

    # 2. The author explains the flagged probe: the gate is met, and the task goes to the queue.
    page.get_by_label(re.compile("Keyword echo")).fill("An echo of the price still states the right price; the criterion's job is done.")
    page.get_by_role("button", name="Save explanation").click()
    expect(page.locator("#gate-probes")).to_contain_text("Met")
    expect(page.locator("#gate-probes")).not_to_contain_text("Not met")
    page.get_by_label("Note for the reviewers (optional)").fill("The keyword-echo probe is explained in the probe panel.")
    page.get_by_role("button", name="Submit for review").click()
    expect(page.get_by_role("status").filter(has_text="Version 1 is in the review queue.")).to_be_visible()
    expect(page.locator("#review-status")).to_contain_text("0 of 2 reviews done")
    sign_out(page)

    # 3. Rita reviews on the evidence, answers the checklist and approves.
    sign_in(page, base, rita.username)
    page.get_by_role("navigation").get_by_role("link", name="Review queue").click()
    page.get_by_role("button", name="Claim next").click()
    expect(page.locator("#author-note")).to_contain_text("The keyword-echo probe is explained")
    expect(page.locator("#evidence-pass-rate")).to_contain_text("3 of 8 graded")
    expect(page.locator("#evidence-probes")).to_contain_text("An echo of the price still states the right price")
    evidence_top = page.locator("#evidence-trials").bounding_box()["y"]
    assert page.locator("#decision").bounding_box()["y"] > evidence_top  # the decision comes after the evidence
    page.screenshot(path=shots / "02-review-page-with-evidence.png", full_page=True)
    answer_checklist(page)
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status").filter(has_text="it goes on to the next reviewer")).to_be_visible()
    sign_out(page)

    # 4. Ravi reviews independently (Rita's decision stays hidden until he decides) and asks for changes.
    sign_in(page, base, ravi.username)
    page.get_by_role("navigation").get_by_role("link", name="Review queue").click()
    page.get_by_role("button", name="Claim next").click()
    expect(page.locator("#reviews-so-far")).to_contain_text("1 other reviewer has decided")
    answer_checklist(page, fail=(2,))
    page.get_by_label(re.compile("Comment for the author")).fill("No criterion checks the currency: add one.")
    page.get_by_role("button", name="Request changes").click()
    expect(page.get_by_role("status").filter(has_text="the reviewers disagree, so an admin decides")).to_be_visible()
    sign_out(page)

    # 5. The admin is told (the bell), sees both reviews and settles it.
    sign_in(page, base, admin.username)
    bell = page.locator("#notification-bell")
    expect(bell).to_have_attribute("aria-label", "Notifications, 1 unread")
    bell.click()
    page.locator("tr", has_text="Reviewers disagree").get_by_role("link", name="Open").click()
    expect(page.get_by_role("heading", name="Settle the disagreement")).to_be_visible()
    reviews = page.locator("#reviews-so-far .review-entry")
    expect(reviews).to_have_count(2)
    expect(page.locator("#reviews-so-far")).to_contain_text("rita-reviewer")
    expect(page.locator("#reviews-so-far")).to_contain_text("No criterion checks the currency")
    page.screenshot(path=shots / "03-adjudication.png", full_page=True)
    page.get_by_label("Why").fill("The price is stated in dollars in every document; a currency criterion adds nothing here.")
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status").filter(has_text="Settled: Approved, State the purchase price v1")).to_be_visible()

    # The reviewer dashboard: the pair's decisions disagreed on their one shared submission.
    page.goto(f"{base}/reviews/stats/")
    expect(page.locator("#stat-adjudication")).to_have_text("0")
    expect(page.locator("#stats-pairs")).to_contain_text("rita-reviewer")
    expect(page.locator("#stats-pairs")).to_contain_text("ravi-reviewer")
    page.screenshot(path=shots / "05-reviewer-dashboard.png", full_page=True)

    # 6. The pack includes the task.
    page.goto(f"{base}/projects/{project.pk}/")
    page.get_by_role("main").get_by_role("link", name="Packs").click()
    expect(page.get_by_label("State the purchase price v1")).to_be_checked()
    page.get_by_label("Pack name").fill("ma-qa")
    page.get_by_role("button", name="Build pack").click()
    pack_row = page.locator("tr[id^=pack-]", has_text="ma-qa v1")
    expect(pack_row.get_by_text("Ready")).to_be_visible(timeout=PACK_BUILD_TIMEOUT_MS)

    # 7. The audit trail shows every step, with who and when.
    page.goto(f"{base}/tasks/{env_task.pk}/audit/")
    timeline = page.locator("#task-audit")
    for line in ("Explained probe “Keyword echo”", "Submitted version 1", "Claimed version 1 for review",
                 "Checklist on version 1: 5 pass, 0 fail", "Checklist on version 1: 4 pass, 1 fail", "Approved on version 1",
                 "Changes requested on version 1: No criterion checks the currency", "The reviewers of version 1 disagree",
                 "Adjudicated version 1: Approve", "Version 1 approved"):
        expect(timeline).to_contain_text(line)
    for who in ("alice-author", "rita-reviewer", "ravi-reviewer", "adam-admin"):
        expect(timeline).to_contain_text(who)
    page.screenshot(path=shots / "04-audit-trail.png", full_page=True)

    # The author was told of the decision.
    sign_out(page)
    sign_in(page, base, author.username)
    expect(page.locator("#notification-bell")).to_have_attribute("aria-label", re.compile(r"Notifications, [1-9]\d* unread"))
    # The one refused request is the blocked submit (a 422 the page shows, as step 1 checked).
    assert [e for e in console_log.errors if "status of 422" not in e] == []
    assert len(console_log.errors) == 1
