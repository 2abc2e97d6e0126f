"""The project page's 100th page costs what its first does, and task lists on pages (the
project's tasks, the dashboard's drafts) read only the columns they show."""

import html
import re

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.pages.test_lists_at_scale import TASK_ROW, add_tasks

UNSHOWN = ("prompt", "reference_answer", "outline", "password", "email")


def _get(client, url: str) -> tuple[list[str], str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return [q["sql"] for q in captured.captured_queries], html.unescape(response.content.decode())


def _task_rows_query(queries: list[str]) -> str:
    return next(sql for sql in queries if re.search(r'FROM "authoring_envtask".*LIMIT', sql) and "COUNT(" not in sql)


def test_a_deep_page_of_the_project_runs_the_queries_of_the_first_and_reads_only_what_it_shows(client, team, world):
    add_tasks(team, world, 5_000)
    client.force_login(team.admin)
    url = reverse("project-detail", args=[team.project.pk])
    first, _ = _get(client, url)
    deep, deep_page = _get(client, url + "?page=99")
    assert len(deep) == len(first)
    assert len(TASK_ROW.findall(deep_page)) == 50 and "Page 99 of 100" in deep_page
    for sql in (_task_rows_query(first), _task_rows_query(deep)):
        assert not [column for column in UNSHOWN if f'."{column}"' in sql], sql
        # Sorted as the (project, updated_at, id) index is: DESC without NULLS LAST (a column
        # that cannot be empty), or PostgreSQL would sort the project for every page.
        assert '"updated_at" DESC, "authoring_envtask"."id" DESC' in sql and "NULLS" not in sql
    # The page shows what it showed before: each task's world, author and age.
    assert world.title in deep_page and team.author.username in deep_page


def test_the_dashboards_drafts_read_only_what_they_show(client, team, world):
    add_tasks(team, world, 300)
    client.force_login(team.author)
    queries, page = _get(client, reverse("dashboard"))
    drafts = _task_rows_query(queries)
    assert not [column for column in UNSHOWN if f'."{column}"' in drafts], drafts
    assert team.project.name in page and "Task 00299" in page  # the newest first
