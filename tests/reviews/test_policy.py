"""The project's review policy: gates before submitting, K approvals from distinct reviewers,
adjudication of a disagreement, withdrawal, lapsed claims, and the admin's settings page."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from authoring import services as authoring_services
from authoring.models import EnvTaskStatus
from core.exceptions import ApplicationError, PermissionRefused
from reviews import services
from reviews.models import AuditEvent, ChecklistItem, ReviewPolicy, Submission, SubmissionStatus
from rollouts.models import Grade, GradeStatus, ProbeRun, Rollout, RolloutBatch, RolloutStatus
from tests import factories
from tests.grading.planted.judge import judge_by_rules, value_rule

HX = {"HTTP_HX_REQUEST": "true"}


def graded_batch(env_task, passed: list[bool]) -> RolloutBatch:
    """A finished batch on the task's current rubric version whose rollouts were graded
    as `passed` says (the rows a real run and its grading leave)."""
    rubric = env_task.rubric_versions.order_by("-number").first()
    batch = RolloutBatch.objects.create(env_task=env_task, project_id=env_task.project_id, rubric_version=rubric,
                                        task_snapshot={"title": env_task.title}, endpoint_name="scripted", n=len(passed))
    for i, ok in enumerate(passed):
        rollout = Rollout.objects.create(batch=batch, index=i, status=RolloutStatus.COMPLETED, final_answer="The price is $12m.")
        Grade.objects.create(rollout=rollout, rubric_version=rubric, status=GradeStatus.GRADED, passed=ok, score=1.0 if ok else 0.2,
                             met_points=9 if ok else 2, positive_points=9, graded_at=timezone.now())
    return batch


def policy(project, **fields) -> ReviewPolicy:
    return ReviewPolicy.objects.update_or_create(project=project, defaults=fields)[0]


def decide(submission, reviewer, decision="approve", comment="", fail=()):
    claimed = services.submission_claim_next(user=reviewer)
    assert claimed == submission, f"{reviewer} claimed {claimed}, not {submission}"
    return services.review_decide(submission=submission, user=reviewer, decision=decision, comment=comment,
                                  checklist=factories.checklist(submission.project_id, fail=fail))


# --- Gates ----------------------------------------------------------------------------------

def test_the_graded_rollouts_gate_blocks_until_enough_are_graded_on_the_current_rubric(team, env_task):
    policy(team.project, gate_graded_rollouts=True, min_graded_rollouts=4)
    graded_batch(env_task, [True, False])
    with pytest.raises(ApplicationError) as refused:
        services.submission_create(env_task=env_task, user=team.author)
    assert "At least 4 graded rollouts on the current rubric — 2 graded on rubric version 1" in refused.value.message
    assert refused.value.extra["gates"][0]["gate"] == "graded_rollouts" and "Run trials" in refused.value.extra["gates"][0]["fix"]
    assert not Submission.objects.exists()
    graded_batch(env_task, [True, False])
    assert services.submission_create(env_task=env_task, user=team.author).number == 1


def test_a_new_rubric_version_needs_its_own_graded_rollouts(team, env_task):
    policy(team.project, gate_graded_rollouts=True, min_graded_rollouts=2)
    graded_batch(env_task, [True, False])
    rubric = env_task.rubric_versions.get()
    authoring_services.rubric_version_freeze(rubric_version=rubric)  # graded: frozen, the next edit starts version 2
    authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text="Names the buyer", points=2)
    with pytest.raises(ApplicationError, match="0 graded on rubric version 2"):
        services.submission_create(env_task=env_task, user=team.author)


@pytest.mark.parametrize(("passed", "blocked", "why"), [
    ([True] * 8, True, "too easy"),
    ([False] * 8, True, "No trial solves it"),
    ([True, False, False, False, True, False, False, False], False, ""),
])
def test_the_difficulty_gate_wants_a_learnable_task(team, env_task, passed, blocked, why):
    policy(team.project, gate_difficulty=True, pass1_ceiling=0.9, passk_floor=0.1)
    graded_batch(env_task, passed)
    if blocked:
        with pytest.raises(ApplicationError, match=why):
            services.submission_create(env_task=env_task, user=team.author)
    else:
        assert services.submission_create(env_task=env_task, user=team.author)


def test_the_difficulty_gate_says_when_nothing_was_measured(team, env_task):
    policy(team.project, gate_difficulty=True)
    with pytest.raises(ApplicationError, match="not measured on this rubric version"):
        services.submission_create(env_task=env_task, user=team.author)


def test_gates_that_are_off_do_not_block(team, env_task):
    assert services.submission_create(env_task=env_task, user=team.author).number == 1


@pytest.fixture
def flagged_task(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    """A task whose one criterion names no value: the probes' near miss passes it (flagged)."""
    from rollouts.grading.services import grade_execute
    from verification.services import probe_run_start

    fake_llm.responder = judge_by_rules(value_rule)
    env_task = authoring_services.env_task_create(world=world, user=team.author, title="Price",
                                                  prompt="Read the SPA and state the purchase price.",
                                                  reference_answer="The purchase price is $48.5 million.")
    rubric = env_task.rubric_versions.get()
    authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text="States the purchase price",
                                     points=4, tag="essential")
    policy(team.project, gate_probes=True)
    with pytest.raises(ApplicationError, match="Run the probes"):
        services.submission_create(env_task=env_task, user=team.author)
    with django_capture_on_commit_callbacks(execute=False):
        probe_run_start(env_task=env_task, user=team.author, judge_endpoint=endpoint)
    for grade in Grade.objects.filter(status=GradeStatus.QUEUED).order_by("pk"):
        grade_execute(grade_id=grade.pk)
    return env_task


def test_the_probe_gate_wants_every_flagged_probe_explained(client, team, flagged_task):
    with pytest.raises(ApplicationError, match="1 flagged, 1 unexplained"):
        services.submission_create(env_task=flagged_task, user=team.author)
    near_miss = ProbeRun.objects.get(env_task=flagged_task).answers.get(kind="near_miss")
    client.force_login(team.author)
    panel = client.get(reverse("task-reviews", args=[flagged_task.pk]), **HX).content.decode()
    assert 'id="gate-probes"' in panel and "Not met" in panel and near_miss.label in panel and "Save explanation" in panel

    url = reverse("probe-explain", args=[flagged_task.pk, near_miss.pk])
    assert client.post(url, {"note": ""}, **HX).status_code == 422
    client.force_login(team.reviewer)
    assert client.post(url, {"note": "Fine."}, **HX).status_code == 403  # reviewers do not edit the task
    client.force_login(team.author)
    panel = client.post(url, {"note": "A near miss on the price is what the criterion's tag allows."}, **HX).content.decode()
    assert "Flagged probes to explain" not in panel and "Met" in panel
    submission = services.submission_create(env_task=flagged_task, user=team.author, note="See my note on the near miss.")
    assert submission.author_note == "See my note on the near miss."
    assert AuditEvent.objects.filter(env_task=flagged_task, verb="probe_explained").count() == 1


def test_a_blocked_submit_on_the_page_says_which_gate_and_what_to_do(client, team, env_task):
    policy(team.project, gate_graded_rollouts=True, min_graded_rollouts=3)
    client.force_login(team.author)
    response = client.post(reverse("task-submit", args=[env_task.pk]), {"note": "Please look at criterion 2."}, **HX)
    html = response.content.decode()
    assert response.status_code == 422
    assert "At least 3 graded rollouts on the current rubric" in html and "Run trials (Trials tab)" in html
    assert "Please look at criterion 2." in html  # the note typed is still there
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.DRAFT and not Submission.objects.exists()


# --- K approvals, disagreement, adjudication --------------------------------------------------------

@pytest.fixture
def two_reviewers(team):
    policy(team.project, approvals_required=2)
    return team.reviewer, factories.member(team.project, "reviewer")


def test_two_approvals_from_distinct_reviewers_approve(team, env_task, two_reviewers):
    first, second = two_reviewers
    submission = services.submission_create(env_task=env_task, user=team.author)
    assert submission.approvals_required == 2
    decide(submission, first)
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.QUEUED and submission.claimed_by is None
    assert services.submission_claim_next(user=first) is None  # never the same reviewer twice
    decide(submission, second)
    submission.refresh_from_db()
    env_task.refresh_from_db()
    assert submission.status == SubmissionStatus.APPROVED and env_task.status == EnvTaskStatus.APPROVED
    assert submission.reviews.count() == 2


def _approved_by(client, admin, project, submission) -> str:
    """The "Approved by" cell of the version's row on the packs page."""
    import re

    client.force_login(admin)
    page = client.get(reverse("pack-list", args=[project.pk])).content.decode()
    row = re.search(rf'<tr><td><input[^>]*id="sub-{submission.pk}"[^>]*>.*?</tr>', page, re.S)
    assert row, "the approved version is not offered for a pack"
    return re.findall(r"<td>(.*?)</td>", row.group(0), re.S)[-1]


def test_the_packs_page_names_every_reviewer_who_approved(client, team, env_task, two_reviewers):
    first, second = two_reviewers
    submission = services.submission_create(env_task=env_task, user=team.author)
    decide(submission, first)
    decide(submission, second)
    assert _approved_by(client, team.admin, team.project, submission) == f"{first.username}, {second.username}"


def _disagreed(team, env_task, two_reviewers) -> Submission:
    """A version one reviewer approved and the other sent back: it waits for an admin."""
    first, second = two_reviewers
    submission = services.submission_create(env_task=env_task, user=team.author)
    decide(submission, first, "approve")
    decide(submission, second, "request_changes", comment="The rubric misses the escrow.")
    submission.refresh_from_db()
    return submission


def test_the_packs_page_names_the_admin_who_settled_a_disagreement(client, team, env_task, two_reviewers):
    submission = _disagreed(team, env_task, two_reviewers)
    services.submission_adjudicate(submission=submission, user=team.admin, decision="approve", note="Escrow is out of scope.")
    assert _approved_by(client, team.admin, team.project, submission) == f"{team.admin.username} (settled a disagreement)"


def test_two_change_requests_send_it_back(team, env_task, two_reviewers):
    first, second = two_reviewers
    submission = services.submission_create(env_task=env_task, user=team.author)
    decide(submission, first, "request_changes", fail=(1,))
    decide(submission, second, "request_changes", comment="Cite the LOI.")
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.CHANGES_REQUESTED


def test_a_disagreement_goes_to_an_admin_who_settles_it_with_both_reviews_in_view(client, team, env_task, two_reviewers):
    submission = _disagreed(team, env_task, two_reviewers)
    assert submission.status == SubmissionStatus.ADJUDICATION
    assert services.submission_claim_next(user=team.admin) is None  # not in the reviewers' queue

    client.force_login(team.admin)
    queue = client.get(reverse("review-queue")).content.decode()
    assert 'id="adjudication-queue"' in queue and env_task.title in queue
    page = client.get(reverse("submission-review", args=[submission.pk])).content.decode()
    assert "Settle the disagreement" in page and "The rubric misses the escrow." in page
    assert "The reviewers disagree: an admin decides." in page and "Needs 2 approvals" not in page
    assert page.count('class="review-entry"') == 2 and page.index("Settle the disagreement") > page.index("review-entry")
    assert client.post(reverse("submission-adjudicate", args=[submission.pk]), {"decision": "approve", "note": ""}).status_code == 422
    client.post(reverse("submission-adjudicate", args=[submission.pk]), {"decision": "approve", "note": "Escrow is out of scope."})
    submission.refresh_from_db()
    env_task.refresh_from_db()
    assert submission.status == SubmissionStatus.APPROVED and env_task.status == EnvTaskStatus.APPROVED
    assert submission.adjudication.note == "Escrow is out of scope." and submission.adjudication.admin == team.admin
    settled = client.get(reverse("submission-review", args=[submission.pk])).content.decode()
    assert f"Settled by {team.admin.username} after the reviewers disagreed." in settled and "Needs 2 approvals" not in settled
    verbs = list(AuditEvent.objects.filter(submission=submission).values_list("verb", flat=True))
    assert verbs == ["submitted", "claimed", "checklist", "reviewed", "claimed", "checklist", "reviewed", "adjudication_needed",
                     "adjudicated", "approved"]


def test_only_an_admin_who_did_not_write_it_adjudicates(team, env_task, two_reviewers):
    first, second = two_reviewers
    submission = services.submission_create(env_task=env_task, user=team.author)
    with pytest.raises(ApplicationError, match="only a submission whose reviewers disagree"):
        services.submission_adjudicate(submission=submission, user=team.admin, decision="approve", note="x")
    decide(submission, first, "approve")
    decide(submission, second, "request_changes", comment="No.")
    with pytest.raises(PermissionRefused):
        services.submission_adjudicate(submission=submission, user=first, decision="approve", note="Mine is right.")


def test_a_second_reviewer_does_not_see_the_first_decision_until_deciding(client, team, env_task, two_reviewers):
    first, second = two_reviewers
    submission = services.submission_create(env_task=env_task, user=team.author)
    decide(submission, first, "approve", comment="Looks right to me.")
    client.force_login(second)
    # Before claiming it (it is waiting for a second reviewer), as after: the submission's page,
    # the task's Review tab and its audit trail all keep the first decision to themselves.
    for claimed in (False, True):
        if claimed:
            services.submission_claim_next(user=second)
        page = client.get(reverse("submission-review", args=[submission.pk])).content.decode()
        assert "Looks right to me." not in page and "1 other reviewer has decided" in page
        tab = client.get(reverse("task-reviews", args=[env_task.pk]), HTTP_HX_REQUEST="true").content.decode()
        assert f"{first.username} (approved)" not in tab and "1 decided (shown once you have decided)" in tab
        audit = client.get(reverse("task-audit", args=[env_task.pk])).content.decode()
        assert "Looks right to me." not in audit and "Approved on version 1" not in audit, claimed
    # The author sees it all; the second reviewer does once they have decided.
    client.force_login(team.author)
    tab = client.get(reverse("task-reviews", args=[env_task.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert f"{first.username} (approved)" in tab
    decide(Submission.objects.get(pk=submission.pk), second, "approve", comment="Fine.")
    client.force_login(second)
    audit = client.get(reverse("task-audit", args=[env_task.pk])).content.decode()
    assert "Looks right to me." in audit and "Approved on version 1" in audit


# --- Checklist ------------------------------------------------------------------------------

def test_every_checklist_item_is_answered_and_changes_need_a_failed_item_or_a_comment(team, env_task):
    submission = services.submission_create(env_task=env_task, user=team.author)
    services.submission_claim_next(user=team.reviewer)
    partial = factories.checklist(team.project.pk)[:3]
    with pytest.raises(ApplicationError, match="Not answered: The judge agrees with the expert; The difficulty"):
        services.review_decide(submission=submission, user=team.reviewer, decision="approve", checklist=partial)
    with pytest.raises(ApplicationError, match="fail a checklist item or write a comment"):
        services.review_decide(submission=submission, user=team.reviewer, decision="request_changes",
                               checklist=factories.checklist(team.project.pk))
    review = services.review_decide(submission=submission, user=team.reviewer, decision="request_changes",
                                    checklist=factories.checklist(team.project.pk, fail=(2,)))
    assert [(a.item_text, a.passed) for a in review.answers.all()][2] == ("The rubric covers the ways to be right and wrong", False)


def test_a_reworded_item_keeps_the_wording_an_answer_was_given_to(team, env_task):
    submission = services.submission_create(env_task=env_task, user=team.author)
    decide(submission, team.reviewer)
    item = ChecklistItem.objects.filter(project=team.project).first()
    services.checklist_item_update(item=item, user=team.admin, text="The world is realistic")
    assert submission.reviews.get().answers.first().item_text == "The world is realistic and consistent"


def test_the_admin_settings_page_edits_the_policy_and_the_checklist(client, team, env_task):
    url = reverse("review-settings", args=[team.project.pk])
    client.force_login(team.reviewer)
    assert client.get(url).status_code == 404  # admin-only pages are hidden, as the packs are
    client.force_login(team.admin)
    page = client.get(url).content.decode()
    assert "This project uses the default checklist" in page and "The difficulty is learnable" in page
    client.post(reverse("checklist-customise", args=[team.project.pk]))
    client.post(reverse("checklist-add", args=[team.project.pk]), {"text": "Every figure is in the data room"})
    assert ChecklistItem.objects.filter(project=team.project, active=True).count() == 6
    response = client.post(reverse("review-policy-update", args=[team.project.pk]), {
        "approvals_required": 2, "gate_graded_rollouts": "on", "min_graded_rollouts": 8, "pass1_ceiling": 0.9, "passk_floor": 0.1,
        "queue_alert_threshold": 5})
    assert response.status_code == 302
    saved = ReviewPolicy.objects.get(project=team.project)
    assert (saved.approvals_required, saved.gate_graded_rollouts, saved.gate_probes) == (2, True, False)
    page = client.get(response["Location"]).content.decode()
    assert "Review policy saved. It applies to tasks submitted from now on." in page
    assert "a change here applies to tasks submitted from now on" in page
    fields = {"min_graded_rollouts": 8, "pass1_ceiling": 0.9, "passk_floor": 0.1, "queue_alert_threshold": 5}  # gates off
    client.post(reverse("review-policy-update", args=[team.project.pk]), {"approvals_required": 2, **fields})
    waiting = services.submission_create(env_task=env_task, user=team.author)  # submitted under 2 approvals
    client.post(reverse("review-policy-update", args=[team.project.pk]), {"approvals_required": 1, **fields})
    assert "the 1 submission already waiting keeps the number of approvals it was submitted with" in client.get(url).content.decode()
    assert Submission.objects.get(pk=waiting.pk).approvals_required == 2
    bad = client.post(reverse("review-policy-update", args=[team.project.pk]), {
        "approvals_required": 9, "min_graded_rollouts": 8, "pass1_ceiling": 0.9, "passk_floor": 0.1, "queue_alert_threshold": 5})
    assert bad.status_code == 422 and "between 1 and 5" in bad.content.decode()
    assert ReviewPolicy.objects.get(project=team.project).approvals_required == 1  # as last saved


# --- Withdraw, lapsed claims, stale decisions -----------------------------------------------------

def test_a_decision_on_a_withdrawn_submission_is_refused_and_saves_nothing(team, env_task):
    submission = services.submission_create(env_task=env_task, user=team.author)
    services.submission_claim_next(user=team.reviewer)
    services.submission_withdraw(submission=submission, user=team.author)
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.DRAFT
    with pytest.raises(ApplicationError, match="The author withdrew version 1"):
        services.review_decide(submission=submission, user=team.reviewer, decision="approve",
                               checklist=factories.checklist(team.project.pk))
    assert not submission.reviews.exists()
    with pytest.raises(ApplicationError, match="only a version still in review"):
        services.submission_withdraw(submission=submission, user=team.author)


def test_a_lapsed_claim_goes_to_the_next_reviewer_and_the_first_cannot_decide(team, env_task, settings):
    settings.REVIEW_CLAIM_TIMEOUT_HOURS = 1
    submission = services.submission_create(env_task=env_task, user=team.author)
    services.submission_claim_next(user=team.reviewer)
    assert services.submission_claim_next(user=team.admin) is None
    Submission.objects.filter(pk=submission.pk).update(claimed_at=timezone.now() - timedelta(hours=2))
    assert services.submission_claim_next(user=team.admin) == submission
    with pytest.raises(ApplicationError, match="Your claim on this submission has ended"):
        services.review_decide(submission=submission, user=team.reviewer, decision="approve",
                               checklist=factories.checklist(team.project.pk))
    assert AuditEvent.objects.filter(submission=submission, verb="claim_expired").exists()


def test_the_queue_page_is_paginated(client, team, world):
    for i in range(55):
        factories.env_task(world, team.author, title=f"Task {i:02d}", criteria=1)
    from authoring.models import EnvTask

    for env_task in EnvTask.objects.filter(project=team.project):
        services.submission_create(env_task=env_task, user=team.author)
    client.force_login(team.reviewer)
    first = client.get(reverse("review-queue")).content.decode()
    assert "Page 1 of 2 · 55 in all" in first and first.count("<tr><td>Task ") == 50
    second = client.get(reverse("review-queue") + "?page=2").content.decode()
    assert second.count("<tr><td>Task ") == 5


def test_reviewers_are_told_once_when_the_queue_reaches_the_threshold(team, world):
    from reviews.models import Notification

    policy(team.project, queue_alert_threshold=3)
    for i in range(5):
        services.submission_create(env_task=factories.env_task(world, team.author, title=f"T{i}", criteria=1), user=team.author)
    notices = Notification.objects.filter(text__contains="submissions are waiting for review")
    assert sorted(n.recipient.username for n in notices) == sorted([team.reviewer.username, team.admin.username])
    assert {n.text for n in notices} == {"3 submissions are waiting for review in Corporate law — M&A."}
    assert not Notification.objects.filter(recipient=team.author).exists()


def test_an_approved_task_starts_a_new_version_and_packs_keep_the_approved_one(client, team, other_team, env_task):
    """It said "read-only until a reviewer sends it back", which no reviewer could do: an
    approved task could never change. Its author now starts a new version; the approved one
    stays approved, and what a pack of the task holds, until the next one is approved."""
    from packs.services import newest_approved_submission_ids

    approved = services.submission_create(env_task=env_task, user=team.author)
    decide(approved, team.reviewer, "approve")
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.APPROVED
    client.force_login(team.author)
    page = client.get(reverse("task-editor", args=[env_task.pk])).content.decode()
    assert "its approved version is what packs hold" in page and 'id="start-new-version"' in page
    assert 'id="task-approved-version"' not in page  # approved itself: its status badge says so
    assert "until a reviewer sends it back" not in page
    client.force_login(team.reviewer)  # only authors and admins start one; outsiders do not see the task
    assert client.post(reverse("task-new-version", args=[env_task.pk])).status_code == 403
    client.force_login(other_team.author)
    assert client.post(reverse("task-new-version", args=[env_task.pk])).status_code == 404
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.APPROVED
    client.force_login(team.author)
    response = client.post(reverse("task-new-version", args=[env_task.pk]), follow=True)
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.DRAFT and "A new version is open for editing" in response.content.decode()
    # The header says the approved version still stands (it read "Draft" alone, as if nothing were approved).
    assert '<span class="badge draft" id="task-status">Draft</span>' in response.content.decode()
    assert 'id="task-approved-version" title="Packs hold the approved version until a newer one is approved">v1 approved, in packs' \
        in response.content.decode()
    authoring_services.env_task_update(env_task=env_task, user=team.author, base_revision=env_task.revision, title=env_task.title,
                                       prompt=env_task.prompt + " Cite the clause.", deliverable_kind=env_task.deliverable_kind,
                                       reference_answer=env_task.reference_answer)
    approved.refresh_from_db()
    assert approved.status == SubmissionStatus.APPROVED
    assert newest_approved_submission_ids(Submission.objects.filter(env_task=env_task)) == [approved.pk]
    second = services.submission_create(env_task=env_task, user=team.author)
    assert second.number == 2 and "Cite the clause." in second.snapshot["task"]["prompt"]
    assert client.post(reverse("task-new-version", args=[env_task.pk])).status_code == 422  # in review: not approved


def test_the_api_starts_a_new_version_of_an_approved_task(team, env_task):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    def api(user) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
        return client

    url = f"/api/tasks/{env_task.pk}/new-version/"
    refused = api(team.author).post(url)
    assert refused.status_code == 400 and "Only an approved task starts a new version" in refused.json()["detail"]
    decide(services.submission_create(env_task=env_task, user=team.author), team.reviewer, "approve")
    assert api(team.reviewer).post(url).status_code == 403
    started = api(team.author).post(url)
    assert started.status_code == 200 and started.json()["status"] == "draft"
