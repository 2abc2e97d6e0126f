"""A page costs the same number of queries whatever the amount of data on it."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from authoring import services
from packs.models import Pack
from reviews import services as review_services
from tests import factories


def queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured)


def grow(team, world, env_task, n):
    for i in range(n):
        services.document_create(world=world, user=team.author, path=f"More/Doc {n}-{i}.md", brief="b", content="text")
        factories.env_task(world, team.author, title=f"Task {n}-{i}", criteria=1)
    approved = factories.env_task(world, team.author, title=f"Approved {n}")
    submission = review_services.submission_create(env_task=approved, user=team.author)
    review_services.submission_claim_next(user=team.reviewer)
    review_services.review_decide(submission=submission, user=team.reviewer, decision="approve",
        checklist=factories.checklist(submission.project_id))
    for i in range(n):
        pack = Pack.objects.create(project=team.project, name=f"p{i}-{n}", version=Pack.objects.count() + 1, created_by=team.admin)
        pack.submissions.add(submission)


@pytest.mark.parametrize("page", ["dashboard", "project", "world", "task", "queue", "packs"])
def test_pages_do_not_grow_with_data(client, team, world, env_task, page):
    urls = {
        "dashboard": reverse("dashboard"),
        "project": reverse("project-detail", args=[team.project.pk]),
        "world": reverse("world-editor", args=[world.pk]),
        "task": reverse("task-editor", args=[env_task.pk]),
        "queue": reverse("review-queue"),
        "packs": reverse("pack-list", args=[team.project.pk]),
    }
    client.force_login(team.admin)
    grow(team, world, env_task, 2)
    small = queries(client, urls[page])
    grow(team, world, env_task, 12)
    assert queries(client, urls[page]) == small
