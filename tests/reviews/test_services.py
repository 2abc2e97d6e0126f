import threading

import pytest
from django.db import connection

from authoring.models import EnvTaskStatus
from core.exceptions import ApplicationError
from reviews import services
from reviews.models import SubmissionStatus
from tests import factories


def test_submit_freezes_a_snapshot_and_queues_it(team, env_task):
    submission = services.submission_create(env_task=env_task, user=team.author)
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.IN_REVIEW
    assert submission.number == 1 and submission.status == SubmissionStatus.QUEUED
    assert submission.snapshot["task"]["prompt"] == env_task.prompt
    assert len(submission.snapshot["world"]["documents"]) == 2
    assert submission.rubric_version.is_frozen


def test_submit_needs_a_prompt_and_a_positive_criterion(team, world):
    from authoring import services as authoring_services

    env_task = authoring_services.env_task_create(world=world, user=team.author, title="Empty")
    with pytest.raises(ApplicationError, match="write the prompt and add at least one rubric criterion"):
        services.submission_create(env_task=env_task, user=team.author)


def test_author_never_reviews_own_task(team, env_task):
    from accounts.models import Membership

    Membership.objects.filter(user=team.author).update(role="admin")  # even as admin
    submission = services.submission_create(env_task=env_task, user=team.author)
    assert services.submission_claim_next(user=team.author) is None
    with pytest.raises(ApplicationError, match="someone else must review"):
        services.review_decide(submission=submission, user=team.author, decision="approve",
            checklist=factories.checklist(submission.project_id))


def test_request_changes_needs_a_comment_then_author_resubmits(team, env_task):
    submission = services.submission_create(env_task=env_task, user=team.author)
    assert services.submission_claim_next(user=team.reviewer) == submission
    with pytest.raises(ApplicationError, match="Say what needs to change"):
        services.review_decide(submission=submission, user=team.reviewer, decision="request_changes", comment="",
            checklist=factories.checklist(submission.project_id))
    services.review_decide(submission=submission, user=team.reviewer, decision="request_changes", comment="Tighten criterion 2.",
        checklist=factories.checklist(submission.project_id))
    env_task.refresh_from_db()
    assert env_task.status == EnvTaskStatus.CHANGES_REQUESTED
    second = services.submission_create(env_task=env_task, user=team.author)
    assert second.number == 2


def test_deciding_needs_the_claim(team, env_task):
    submission = services.submission_create(env_task=env_task, user=team.author)
    with pytest.raises(ApplicationError, match="Claim this submission"):
        services.review_decide(submission=submission, user=team.reviewer, decision="approve",
            checklist=factories.checklist(submission.project_id))


def test_a_reviewer_gets_back_the_item_they_hold(team, env_task):
    first = services.submission_create(env_task=env_task, user=team.author)
    assert services.submission_claim_next(user=team.reviewer) == first
    assert services.submission_claim_next(user=team.reviewer) == first
    assert services.submission_claim_next(user=team.admin) is None  # the only item is taken


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_claiming_at_the_same_instant_never_get_the_same_item():
    project = factories.project()
    author = factories.member(project, "author")
    reviewers = [factories.member(project, "reviewer") for _ in range(6)]
    world = factories.world(project, author, documents=0)
    for i in range(3):
        services.submission_create(env_task=factories.env_task(world, author, title=f"Task {i}"), user=author)
    barrier = threading.Barrier(len(reviewers))
    claimed: dict[int, int | None] = {}

    def claim(reviewer):
        try:
            barrier.wait()
            submission = services.submission_claim_next(user=reviewer)
            claimed[reviewer.pk] = submission.pk if submission else None
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(r,)) for r in reviewers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [pk for pk in claimed.values() if pk is not None]
    assert len(got) == 3 and len(set(got)) == 3
