"""The review queue stays the same work from 10 to 10,000 waiting submissions: a constant
number of queries, a page of 50, and no snapshot read (each holds its whole world)."""

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from reviews.models import Submission
from reviews.services import submission_create

BIG_WORLD = {"task": {"title": "t"}, "world": {"documents": [{"path": f"Doc {i}.md", "content": "x" * 2000} for i in range(5)]}}


def fill_queue(submission: Submission, total: int) -> None:
    """Waiting versions of the same task (as if resubmitted), each with a 10 KB snapshot."""
    have = Submission.objects.count()
    Submission.objects.bulk_create(
        [Submission(project_id=submission.project_id, env_task_id=submission.env_task_id, number=n + 1, title=f"Queued {n:05d}",
                    rubric_version_id=submission.rubric_version_id, snapshot=BIG_WORLD, submitted_by_id=submission.submitted_by_id)
         for n in range(have, total)],
        batch_size=1000,
    )


def queue_page(client) -> tuple[int, int, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("review-queue"))
    assert response.status_code == 200
    return len(captured), len(response.content), [q["sql"] for q in captured]


def test_the_queue_page_does_the_same_work_for_10_and_10000_submissions(client, team, env_task):
    first = submission_create(env_task=env_task, user=team.author)
    client.force_login(team.reviewer)
    fill_queue(first, 10)
    small_queries, _, _ = queue_page(client)
    fill_queue(first, 60)
    page_queries, page_bytes, _ = queue_page(client)
    fill_queue(first, 10_000)
    large_queries, large_bytes, sql = queue_page(client)
    html = client.get(reverse("review-queue")).content.decode()
    assert "Page 1 of 200 · 10000 in all" in html and html.count("<tr><td>") == 50
    assert large_queries == page_queries == small_queries
    # A full first page is the same size at 60 as at 10,000 (only the pagination line's figures differ).
    assert abs(large_bytes - page_bytes) < 100
    # Nothing reads the snapshot column.
    assert not any("snapshot" in q for q in sql)
    dashboard_sql = []
    with CaptureQueriesContext(connection) as captured:
        client.get(reverse("dashboard"))
    dashboard_sql = [q["sql"] for q in captured]
    assert not any("snapshot" in q for q in dashboard_sql)


def test_the_api_queue_reads_no_snapshot(team, env_task):
    first = submission_create(env_task=env_task, user=team.author)
    fill_queue(first, 300)
    api = APIClient()
    api.force_authenticate(team.reviewer)
    with CaptureQueriesContext(connection) as captured:
        body = api.get("/api/review-queue/").json()
    assert body["count"] == 300 and len(body["results"]) <= 100
    assert not any("snapshot" in q["sql"] for q in captured)


def test_someone_who_reviews_nothing_is_not_offered_the_review_queue(client, team):
    """An author-only member: no Review queue in the navigation nor on the dashboard, and the
    queue's page says why it is empty instead of offering Claim next."""
    client.force_login(team.author)
    dashboard = client.get(reverse("dashboard")).content.decode()
    assert 'id="nav-review-queue"' not in dashboard and 'id="count-queue"' not in dashboard
    queue = client.get(reverse("review-queue")).content.decode()
    assert 'id="queue-not-reviewer"' in queue and 'id="claim-next"' not in queue
    client.force_login(team.reviewer)
    assert 'id="nav-review-queue"' in client.get(reverse("dashboard")).content.decode()
    assert 'id="claim-next"' in client.get(reverse("review-queue")).content.decode()


def test_an_authors_way_back_from_a_submission_is_the_task(client, team, env_task):
    submission = submission_create(env_task=env_task, user=team.author)
    client.force_login(team.author)
    page = client.get(reverse("submission-review", args=[submission.pk])).content.decode()
    crumbs = page.split("<h1>", 1)[0]
    assert f'href="{reverse("task-editor", args=[env_task.pk])}?tab=review"' in crumbs and reverse("review-queue") not in crumbs


def test_a_versions_history_reads_as_its_badges_do(client, team, env_task):
    """It listed raw codes ("new → queued", "claimed → changes_requested")."""
    from reviews.services import submission_claim_next

    submission = submission_create(env_task=env_task, user=team.author)
    submission_claim_next(user=team.reviewer)
    client.force_login(team.reviewer)
    page = client.get(reverse("submission-review", args=[submission.pk])).content.decode()
    assert "Submitted → Waiting for a reviewer</li>" in page and "Waiting for a reviewer → Being reviewed</li>" in page
    assert "→ queued" not in page and "→ claimed" not in page
