"""The lists issue 17 still lacked: a task's trial batches, a batch's rollouts and the model-call
log, each a page at a time, sortable and filterable by allow-listed keys only."""

import html
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from authoring.selectors import rubric_version_current
from llm.models import CallOutcome, CallPurpose, ModelCall
from rollouts.models import Grade, GradeStatus, Rollout, RolloutBatch, RolloutStatus
from tests import factories

HX = {"HTTP_HX_REQUEST": "true"}
BATCH_ROW = re.compile(r'<tr id="batch-row-(\d+)">')
ROLLOUT_ROW = re.compile(r'<tr id="rollout-row-(\d+)"')
CALL_ROW = re.compile(r'<tr id="call-(\d+)">')


def page_of(response) -> str:
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def counted(client, url: str, **headers) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, **headers)
    return len(captured), page_of(response)


# --- A task's batches (the Trials tab) ----------------------------------------------------

def add_batches(env_task, upto: int, *, n: int = 2, cancelled: bool = False, scripted: bool = False,
                status: str = RolloutStatus.COMPLETED) -> list[RolloutBatch]:
    """Bulk batches, each with `n` rollouts of `status`."""
    rubric = rubric_version_current(env_task=env_task)
    start = RolloutBatch.objects.filter(env_task=env_task).count()
    batches = RolloutBatch.objects.bulk_create([
        RolloutBatch(env_task=env_task, project_id=env_task.project_id, rubric_version=rubric, task_snapshot={"title": env_task.title},
                     endpoint_name="scripted" if scripted else f"model-{i:03d}", endpoint_scripted=scripted, n=n,
                     cancelled_at=timezone.now() if cancelled else None)
        for i in range(start, upto)
    ])
    Rollout.objects.bulk_create([Rollout(batch=b, index=j, status=status) for b in batches for j in range(n)])
    return batches


def trials_url(env_task) -> str:
    return reverse("task-trials", args=[env_task.pk])


def test_batches_cost_the_same_at_2_and_20_pages(client, team, env_task):
    client.force_login(team.author)
    add_batches(env_task, 40)
    small, small_page = counted(client, trials_url(env_task) + "?part=batches", **HX)
    add_batches(env_task, 400)
    big, big_page = counted(client, trials_url(env_task) + "?part=batches", **HX)
    assert big == small
    assert "Page 1 of 2 · 40 in all" in small_page and "Page 1 of 20 · 400 in all" in big_page
    assert len(BATCH_ROW.findall(big_page)) == 20


def test_batch_pages_swap_the_list_in_place_and_keep_the_filter(client, team, env_task):
    client.force_login(team.author)
    add_batches(env_task, 25)
    add_batches(env_task, 50, scripted=True)
    url = trials_url(env_task)
    first = page_of(client.get(url + "?scripted=yes", HTTP_HX_TARGET="trials-batches", **HX))
    assert first.lstrip().startswith('<div id="trials-batches"') and 'id="trials-form"' not in first
    assert "Page 1 of 2 · 25 in all" in first and '<option value="yes" selected>' in first
    assert f'href="{url}?page=2&scripted=yes"' in first and 'hx-target="#trials-batches"' in first
    second = page_of(client.get(url + "?page=2&scripted=yes", HTTP_HX_TARGET="trials-batches", **HX))
    assert len(BATCH_ROW.findall(second)) == 5 and "model-0" not in second


def test_batches_sort_by_started_and_rollouts(client, team, env_task):
    client.force_login(team.author)
    small = add_batches(env_task, 3, n=1)
    big = add_batches(env_task, 4, n=5)
    url = trials_url(env_task) + "?part=batches"
    newest_first = BATCH_ROW.findall(page_of(client.get(url, **HX)))
    oldest_first = BATCH_ROW.findall(page_of(client.get(url + "&sort=created", **HX)))
    assert oldest_first == [str(b.pk) for b in small + big] and newest_first == oldest_first[::-1]
    by_size = page_of(client.get(url + "&sort=-n", **HX))
    assert BATCH_ROW.findall(by_size)[0] == str(big[0].pk)
    assert 'aria-sort="descending"' in by_size and "Rollouts ↓" in by_size


def test_batches_filter_by_status_running_finished_cancelled(client, team, env_task):
    client.force_login(team.author)
    finished = add_batches(env_task, 2)
    running = add_batches(env_task, 3, status=RolloutStatus.RUNNING)
    cancelled = add_batches(env_task, 5, cancelled=True, status=RolloutStatus.CANCELLED)
    url = trials_url(env_task) + "?part=batches"
    ids = lambda q: sorted(BATCH_ROW.findall(page_of(client.get(url + q, **HX))))  # noqa: E731
    assert ids("&status=finished") == sorted(str(b.pk) for b in finished)
    assert ids("&status=running") == sorted(str(b.pk) for b in running)
    assert ids("&status=cancelled") == sorted(str(b.pk) for b in cancelled)
    by_status = BATCH_ROW.findall(page_of(client.get(url + "&sort=status", **HX)))
    assert by_status[:2] == [str(b.pk) for b in cancelled][:2]  # "cancelled" < "finished" < "running"
    none = page_of(client.get(url + "&status=running&scripted=yes", **HX))
    assert "No batch matches." in none and BATCH_ROW.findall(none) == []


@pytest.mark.parametrize("query", ["sort=created_by__password", "status=done", "scripted=true", "sort=-endpoint__api_key_env"])
def test_batches_ignore_an_unknown_key_and_say_so(client, team, env_task, query):
    client.force_login(team.author)
    add_batches(env_task, 3)
    page = page_of(client.get(trials_url(env_task) + f"?part=batches&{query}", **HX))
    assert "does not offer" in page and len(BATCH_ROW.findall(page)) == 3


def test_batches_of_another_project_are_404(client, team, env_task, other_team):
    add_batches(env_task, 2)
    client.force_login(other_team.author)
    assert client.get(trials_url(env_task) + "?part=batches&sort=n", **HX).status_code == 404


# --- A batch's rollouts -------------------------------------------------------------------

@pytest.fixture
def graded(env_task) -> RolloutBatch:
    """Six rollouts: 0–3 completed and graded (scores .2 .9 .5 .7, pass at .5), 4 failed, 5 running."""
    rubric = rubric_version_current(env_task=env_task)
    batch = RolloutBatch.objects.create(env_task=env_task, project_id=env_task.project_id, rubric_version=rubric,
                                        task_snapshot={"title": env_task.title}, endpoint_name="fake-model", n=6)
    now = timezone.now()
    for i, (score, cost, took) in enumerate([(0.2, "0.5", 30), (0.9, "0.1", 10), (0.5, "0.9", 20), (0.7, "0.3", 40)]):
        rollout = Rollout.objects.create(batch=batch, index=i, status=RolloutStatus.COMPLETED, cost=Decimal(cost),
                                         started_at=now, finished_at=now + timedelta(seconds=took))
        Grade.objects.create(rollout=rollout, rubric_version=rubric, status=GradeStatus.GRADED, score=score, passed=score >= 0.5)
    Rollout.objects.create(batch=batch, index=4, status=RolloutStatus.FAILED, reason="The model endpoint timed out.")
    Rollout.objects.create(batch=batch, index=5, status=RolloutStatus.RUNNING, started_at=now)
    return batch


def numbers(page: str) -> list[int]:
    return [int(n) for n in ROLLOUT_ROW.findall(page)]


def test_rollouts_sort_by_number_score_cost_and_duration(client, team, graded):
    client.force_login(team.reviewer)
    url = reverse("batch-detail", args=[graded.pk])
    assert numbers(page_of(client.get(url))) == [1, 2, 3, 4, 5, 6]
    assert numbers(page_of(client.get(url + "?sort=-number"))) == [6, 5, 4, 3, 2, 1]
    by_score = page_of(client.get(url + "?sort=-score"))
    assert numbers(by_score)[:4] == [2, 4, 3, 1] and '<option value="-score" selected>Highest score first' in by_score
    assert numbers(page_of(client.get(url + "?sort=cost")))[-4:] == [2, 4, 1, 3]
    by_time = page_of(client.get(url + "?sort=-duration"))
    assert numbers(by_time)[:4] == [4, 1, 3, 2] and "time taken ↓" in by_time


def test_rollouts_filter_by_status_and_grade(client, team, graded):
    client.force_login(team.author)
    url = reverse("batch-detail", args=[graded.pk])
    assert numbers(page_of(client.get(url + "?grade=passed"))) == [2, 3, 4]
    assert numbers(page_of(client.get(url + "?grade=failed"))) == [1]
    failed = page_of(client.get(url + "?status=failed"))
    assert numbers(failed) == [5] and '<option value="failed" selected>' in failed
    assert numbers(page_of(client.get(url + "?status=completed&grade=passed&sort=-score"))) == [2, 4, 3]
    none = page_of(client.get(url + "?status=running&grade=passed"))
    assert "No rollout matches." in none and numbers(none) == []
    assert "6 rollouts of" in none and 'value="6">Rollout 6' in none  # the batch itself is still whole


def test_the_polled_partial_keeps_the_filter_and_sort(client, team, graded):
    client.force_login(team.author)
    url = reverse("batch-detail", args=[graded.pk])
    page = page_of(client.get(url + "?grade=passed&sort=-cost"))
    assert f'hx-get="{url}?sort=-cost&grade=passed" hx-trigger="every 2s"' in page  # still running: it polls
    fragment = page_of(client.get(url + "?sort=-cost&grade=passed", **HX))
    assert fragment.lstrip().startswith('<section class="card trials-live" id="batch-live"')
    assert numbers(fragment) == [3, 4, 2] and f'hx-get="{url}?sort=-cost&grade=passed"' in fragment
    unfiltered = page_of(client.get(url, **HX))
    assert f'hx-get="{url}" hx-trigger="every 2s"' in unfiltered


@pytest.mark.parametrize("query", ["sort=final_answer", "grade=maybe", "status=__all__", "sort=-batch__project__name"])
def test_rollouts_ignore_an_unknown_key_and_say_so(client, team, graded, query):
    client.force_login(team.author)
    page = page_of(client.get(reverse("batch-detail", args=[graded.pk]) + f"?{query}"))
    assert "does not offer" in page and numbers(page) == [1, 2, 3, 4, 5, 6]


def test_rollouts_of_another_project_are_404(client, other_team, graded):
    client.force_login(other_team.author)
    assert client.get(reverse("batch-detail", args=[graded.pk]) + "?sort=score").status_code == 404
    assert client.get(reverse("batch-detail", args=[graded.pk]) + "?grade=passed", **HX).status_code == 404


# --- The model-call log -------------------------------------------------------------------

def add_calls(upto: int) -> None:
    start = ModelCall.objects.count()
    purposes = [CallPurpose.DRAFTING, CallPurpose.ROLLOUT, CallPurpose.JUDGE]
    ModelCall.objects.bulk_create([
        ModelCall(endpoint_name=f"endpoint-{i % 2}", purpose=purposes[i % 3], outcome=CallOutcome.ERROR if i % 5 == 0 else CallOutcome.OK,
                  cost=Decimal(i) / 1000, latency_ms=(i * 37) % 1000)
        for i in range(start, upto)
    ], batch_size=2000)


@pytest.fixture
def staff(db):
    admin = factories.user("site-admin")
    admin.is_staff = True
    admin.save()
    return admin


def test_model_calls_cost_the_same_at_2_and_20_pages(client, staff):
    client.force_login(staff)
    url = reverse("model-endpoints")
    add_calls(100)
    small, small_page = counted(client, url)
    add_calls(1000)
    big, big_page = counted(client, url)
    assert big == small
    assert "Page 1 of 2 · 100 in all" in small_page and "Page 1 of 20 · 1000 in all" in big_page
    assert len(CALL_ROW.findall(big_page)) == 50


def test_model_calls_sort_by_time_cost_and_latency(client, staff):
    client.force_login(staff)
    add_calls(60)
    url = reverse("model-endpoints")
    calls = {c.pk: c for c in ModelCall.objects.all()}
    newest = [int(p) for p in CALL_ROW.findall(page_of(client.get(url)))]
    assert newest == sorted(calls, reverse=True)[:50]
    dearest = [int(p) for p in CALL_ROW.findall(page_of(client.get(url + "?sort=-cost")))]
    assert [calls[p].cost for p in dearest] == sorted((c.cost for c in calls.values()), reverse=True)[:50]
    slowest = page_of(client.get(url + "?sort=-latency"))
    latencies = [calls[int(p)].latency_ms for p in CALL_ROW.findall(slowest)]
    assert latencies == sorted(latencies, reverse=True) and latencies[0] == max(c.latency_ms for c in calls.values())
    assert "Latency ↓" in slowest and '<a href="?page=2&sort=-latency"' in slowest


def test_model_calls_filter_by_endpoint_purpose_and_outcome(client, staff):
    client.force_login(staff)
    add_calls(60)
    url = reverse("model-endpoints")
    page = page_of(client.get(url + "?endpoint=endpoint-1&purpose=judge&status=error"))
    expected = ModelCall.objects.filter(endpoint_name="endpoint-1", purpose="judge", outcome="error")
    assert sorted(int(p) for p in CALL_ROW.findall(page)) == sorted(expected.values_list("pk", flat=True)) and expected.exists()
    assert '<option value="endpoint-1" selected>' in page and '<option value="error" selected>Failed' in page
    assert ">failed</span>" in page and ">ok</span>" not in page.split('id="call-list"')[1]
    none = page_of(client.get(url + "?endpoint=endpoint-0&purpose=check"))
    assert "No model call matches." in none and CALL_ROW.findall(none) == []


@pytest.mark.parametrize("query", ["sort=error", "endpoint=nobody", "purpose=__all__", "status=failed", "sort=-endpoint__api_key_env"])
def test_model_calls_ignore_an_unknown_key_and_say_so(client, staff, query):
    client.force_login(staff)
    add_calls(12)
    page = page_of(client.get(reverse("model-endpoints") + f"?{query}"))
    assert "does not offer" in page and len(CALL_ROW.findall(page)) == 12


def test_model_calls_are_for_site_admins_only(client, team):
    add_calls(5)
    client.force_login(team.admin)
    page = page_of(client.get(reverse("model-endpoints") + "?sort=cost"))
    assert CALL_ROW.findall(page) == [] and 'id="call-list"' not in page
