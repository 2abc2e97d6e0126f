"""Deep pages of the task list cost what the first does: the same queries, read in the
order of an index (no sort of the project), no column the list does not show; cursor links
walk every task once, through ties on updated_at, both ways; offset links still work."""

import base64
import json
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from authoring.models import EnvTask
from tests import factories

TASKS = 60


@pytest.fixture
def many_tasks(team, world) -> list[int]:
    """TASKS tasks of team's project, their updated_at in threes (ties); ids in list order."""
    EnvTask.objects.bulk_create(
        EnvTask(project=team.project, world=world, title=f"Task {n:03d}", prompt="P" * 500, reference_answer="R" * 500,
                created_by=team.author, updated_by=team.author2)
        for n in range(TASKS)
    )
    now = timezone.now()
    for n, pk in enumerate(EnvTask.objects.filter(project=team.project).order_by("pk").values_list("pk", flat=True)):
        EnvTask.objects.filter(pk=pk).update(updated_at=now - timedelta(seconds=n // 3))
    return list(EnvTask.objects.filter(project=team.project).order_by("-updated_at", "-id").values_list("pk", flat=True))


def _path(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def _walk(client, url: str, link: str) -> tuple[list[int], list[dict]]:
    ids, pages = [], []
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        pages.append(body)
        ids.extend(row["id"] for row in (body["results"] if link == "next" else reversed(body["results"])))
        url = body[link] and _path(body[link])
    return ids, pages


def test_cursor_links_walk_every_task_once_through_ties_both_ways(team, many_tasks, api_for):
    client = api_for(team.author)
    ids, pages = _walk(client, "/api/tasks/?limit=7", "next")
    assert ids == many_tasks  # the order of the list, no duplicate, no gap
    assert len(pages) == 9 and all(len(p["results"]) == 7 for p in pages[:-1]) and len(pages[-1]["results"]) == 4
    assert pages[0]["count"] == TASKS and all("count" not in p for p in pages[1:])
    assert pages[0]["previous"] is None and pages[-1]["next"] is None
    assert all("cursor=" in p["next"] and "offset" not in p["next"] and "limit=7" in p["next"] for p in pages[:-1])

    back, _ = _walk(client, _path(pages[-1]["previous"]), "previous")
    assert back == list(reversed(many_tasks[:-4]))  # from the page before the last back to the first

    # A task edited while a client walks moves to the front; the walk neither repeats nor skips the rest.
    middle = client.get(_path(pages[3]["next"])).json()
    moved = middle["results"][0]["id"]
    EnvTask.objects.filter(pk=moved).update(updated_at=timezone.now() + timedelta(hours=1))
    rest, _ = _walk(client, _path(pages[3]["next"]), "next")
    assert rest == [pk for pk in many_tasks[28:] if pk != moved]


def test_cursor_links_keep_the_filters(team, many_tasks, api_for):
    EnvTask.objects.filter(pk__in=many_tasks[::2]).update(status="archived")
    ids, pages = _walk(api_for(team.author), f"/api/tasks/?project={team.project.pk}&status=archived&limit=5", "next")
    assert ids == many_tasks[::2]
    assert all(f"project={team.project.pk}" in p["next"] and "status=archived" in p["next"] for p in pages[:-1])


def test_offset_links_still_work(team, many_tasks, api_for):
    client = api_for(team.author)
    ids, pages = _walk(client, "/api/tasks/?limit=7&offset=0", "next")
    assert ids == many_tasks
    assert all(p["count"] == TASKS for p in pages)
    assert parse_qs(urlsplit(pages[0]["next"]).query) == {"limit": ["7"], "offset": ["7"]}
    deep = client.get("/api/tasks/?limit=7&offset=49").json()
    assert [r["id"] for r in deep["results"]] == many_tasks[49:56]
    assert parse_qs(urlsplit(deep["previous"]).query) == {"limit": ["7"], "offset": ["42"]}
    assert client.get("/api/tasks/?offset=1000").json()["results"] == []


def _queries(client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def _page_query(queries: list[str]) -> str:
    return next(sql for sql in queries if "FROM \"authoring_envtask\"" in sql and "LIMIT" in sql and "COUNT(" not in sql)


def test_a_deep_page_runs_the_queries_of_the_first_and_reads_only_what_it_shows(team, many_tasks, api_for):
    client = api_for(team.author)
    first = _queries(client, "/api/tasks/?limit=5")
    deep = _queries(client, "/api/tasks/?limit=5&offset=50")
    assert len(deep) == len(first)
    _, pages = _walk(client, "/api/tasks/?limit=5", "next")
    second, deep_cursor = _path(pages[0]["next"]), _path(pages[9]["next"])
    assert client.get(deep_cursor).json()["results"][0]["id"] == many_tasks[50]
    assert len(_queries(client, deep_cursor)) == len(_queries(client, second)) == len(first) - 1  # no count
    for sql in (_page_query(first), _page_query(deep), _page_query(_queries(client, deep_cursor))):
        for column in ("prompt", "reference_answer", "outline", "password", "email"):
            assert f'."{column}"' not in sql


def _nodes(node: dict) -> list[dict]:
    return [node, *(n for child in node.get("Plans", []) for n in _nodes(child))]


def _plan(sql: str) -> list[dict]:
    """Every node of the query's plan, with sorts and seq scans priced out: a sort left over
    the tasks is one no index could spare (on a test-sized table sorting is cheap enough that
    the planner may prefer it, which is not what this checks)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
        plan = cursor.fetchone()[0]
    return _nodes((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"])


def _sorts_of_tasks(nodes: list[dict]) -> list[dict]:
    """Sort nodes with the tasks table under them (a sort of the users joined in is no matter)."""
    return [n for n in nodes if "Sort" in n["Node Type"]
            and any(m.get("Relation Name") == "authoring_envtask" for m in _nodes(n))]


def _explained(client, url: str) -> list[dict]:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    page = next(q for q in captured.captured_queries if 'FROM "authoring_envtask"' in q["sql"] and "LIMIT" in q["sql"]
                and "COUNT(" not in q["sql"])
    return _plan(page["sql"])


@pytest.mark.skipif(connection.vendor != "postgresql", reason="EXPLAIN's format is PostgreSQL's")
def test_list_pages_read_the_index_in_order_without_sorting_the_project(team, many_tasks, api_for):
    client = api_for(team.author)
    _, pages = _walk(client, "/api/tasks/?limit=5", "next")
    for url in ("/api/tasks/?limit=5", _path(pages[8]["next"]), f"/api/tasks/?limit=5&project={team.project.pk}"):
        nodes = _explained(client, url)
        assert not _sorts_of_tasks(nodes), (url, nodes)
        assert any(n.get("Index Name") == "envtask_project_updated" for n in nodes), url
    # By offset: the page's ids come from the index; only those 5 rows are sorted again.
    nodes = _explained(client, "/api/tasks/?limit=5&offset=40")
    assert any(n.get("Index Name") == "envtask_project_updated" for n in nodes)
    assert all(n["Plan Rows"] <= 5 for n in _sorts_of_tasks(nodes)), nodes


def test_bad_cursors_are_a_400(team, many_tasks, api_for, other_team):
    client = api_for(team.author)
    good = _path(client.get("/api/tasks/?limit=5").json()["next"])
    token = parse_qs(urlsplit(good).query)["cursor"][0]
    def forged(values: list, backwards: int = 0) -> str:
        return "cursor=" + base64.urlsafe_b64encode(json.dumps({"v": values, "b": backwards}).encode()).decode()

    when = timezone.now().isoformat()
    for query in ("cursor=nonsense", "cursor=e30", f"cursor={token}&offset=5", "cursor=" + "A" * 2000,
                  forged(["not a date", 1]), forged([when, 2**70]), forged([when, [1]]),
                  forged([when + "\x00", 1]), forged([when, 1], backwards=2), forged([when])):
        response = client.get(f"/api/tasks/?{query}")
        assert response.status_code == 400, query
        assert response.json()["detail"]
    # A list that pages by offset only (the audit trail: a union of several tables) refuses a cursor.
    env_task = factories.env_task(factories.world(team.project, team.author), team.author)
    response = client.get(f"/api/tasks/{env_task.pk}/audit/?cursor={token}")
    assert response.status_code == 400 and "cursor" in response.json()["detail"]
    # A cursor is only a position: it shows nothing of another project.
    assert api_for(other_team.author).get(good).json()["results"] == []


def test_the_schema_describes_both_kinds_of_page(api_for, team):
    schema = api_for(team.author).get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/tasks/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"limit", "offset", "cursor", "project", "status"}
    page = schema["components"]["schemas"]["PaginatedEnvTaskListList"]
    assert page["required"] == ["next", "previous", "results"] and "count" in page["properties"]
    audit = schema["paths"]["/api/tasks/{id}/audit/"]["get"]
    assert "cursor" not in {p["name"] for p in audit["parameters"]}
