"""Grades that fail honestly (issue 15). The judge is fed malformed output at the wire (the
fake model server answers "I think it is met!" where JSON is due); a failed grade is never
counted as met, and now it is not counted as a failed attempt either, is said to be failed
wherever a figure would have been, and can be tried again. Checked where the author reads
it: the pages and the API."""

import re

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from authoring import services as authoring_services
from rollouts.grading.services import batch_regrade
from rollouts.models import Grade, GradeStatus, ProbeRun
from tests.fake_llm import Reply
from tests.grading.test_pages import HX, demo, demo_task, graded_batch, run_pending_grades  # noqa: F401 - demo is a fixture

JUDGED = [("States the purchase price of $12m", 5, {"sees": ["answer"]})]
GOOD, BAD = "The purchase price is $12m.", "I could not find it."
MALFORMED = "I think it is met!"


def judge(fails=lambda answer: True):
    """A judge that answers malformed output for the answers `fails` picks, and otherwise
    says met when the answer holds the price."""
    def respond(request) -> Reply:
        content = request.body["messages"][1]["content"]
        answer = content.split("# The agent's final answer\n", 1)[1].split("\n\n#", 1)[0]
        if fails(answer):
            return Reply(content=MALFORMED)
        return Reply(structured={"explanation": "Looked for the price.", "criteria_met": "$12m" in answer})
    return respond


@pytest.fixture
def author_client(client, team):
    client.force_login(team.author)
    return client


@pytest.fixture
def api(team) -> APIClient:
    token, _ = Token.objects.get_or_create(user=team.author)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def failed_batch(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    """Four trajectories that would all pass, every grade failed: the judge's output was malformed."""
    env_task = demo_task(team, world, JUDGED)
    batch = graded_batch(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks, answers=[GOOD] * 4, judge=judge())
    assert set(Grade.objects.filter(rollout__batch=batch).values_list("status", flat=True)) == {GradeStatus.FAILED}
    return batch


@pytest.fixture
def half_failed_batch(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    """Two trajectories graded (both pass), two whose grade failed."""
    env_task = demo_task(team, world, JUDGED)
    return graded_batch(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks, answers=[GOOD, BAD, GOOD, BAD],
                        judge=judge(fails=lambda answer: answer == BAD))


def grading_part(client, batch) -> str:
    return client.get(reverse("batch-quality", args=[batch.pk]) + "?part=grading", **HX).content.decode()


def difficulty_part(client, batch) -> str:
    return client.get(reverse("task-verifier", args=[batch.env_task_id]) + "?part=difficulty", **HX).content.decode()


def summary_line(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.split('id="q-grade-summary"', 1)[1].split("</p>", 1)[0]))


# --- 1. Probes whose grades failed -------------------------------------------------------------------------

def test_probes_whose_grades_all_failed_say_they_could_not_be_graded_and_why(author_client, api, team, world, endpoint, fake_llm):
    env_task = demo_task(team, world, JUDGED)
    fake_llm.responder = judge()
    author_client.post(reverse("task-probes", args=[env_task.pk]), {"judge_endpoint": endpoint.pk}, **HX)
    run_pending_grades()
    run = ProbeRun.objects.get(env_task=env_task)
    html = author_client.get(reverse("task-probes", args=[env_task.pk]), **HX).content.decode()
    summary = html.split('id="q-probe-summary"', 1)[1].split("</p>", 1)[0]
    assert "none flagged" not in summary and "q-good" not in summary
    assert "could not be graded" in summary and "not valid JSON" in summary and "criterion 1" in summary
    body = api.get(f"/api/probe-runs/{run.pk}/").json()
    assert (body["flagged"], body["pending"], body["grading_failed"]) == (0, 0, run.answers.count())


def test_probes_some_of_which_failed_say_how_many_could_not_be_graded(author_client, api, team, world, endpoint, fake_llm):
    env_task = demo_task(team, world, JUDGED)
    fake_llm.responder = judge(fails=lambda answer: answer == "(empty)")  # only the empty answer's grade fails
    author_client.post(reverse("task-probes", args=[env_task.pk]), {"judge_endpoint": endpoint.pk}, **HX)
    run_pending_grades()
    run = ProbeRun.objects.get(env_task=env_task)
    total = run.answers.count()
    html = author_client.get(reverse("task-probes", args=[env_task.pk]), **HX).content.decode()
    summary = re.sub(r"\s+", " ", html.split('id="q-probe-summary"', 1)[1].split("</p>", 1)[0])
    assert f"1 of {total} probes could not be graded" in summary and "not valid JSON" in summary
    assert 'class="q-good"' not in summary  # "none flagged" is not the all-clear it looks like when one was not graded
    assert api.get(f"/api/probe-runs/{run.pk}/").json()["grading_failed"] == 1


# --- 2. pass@k and the band count graded rollouts only ----------------------------------------------------

def test_a_batch_whose_grading_failed_is_not_too_hard(author_client, api, failed_batch):
    grading = grading_part(author_client, failed_batch)
    assert "too hard" not in grading and "4 grading failed" in summary_line(grading)
    panel = difficulty_part(author_client, failed_batch)
    assert "too hard" not in panel and 'id="q-band"' not in panel
    assert "4 rollouts could not be graded" in re.sub(r"\s+", " ", panel) and "No rollout has finished yet" not in panel
    body = api.get(f"/api/batches/{failed_batch.pk}/difficulty/").json()
    assert (body["n"], body["c"], body["grading_failed"], body["band"], body["pass_at_k"]) == (0, 0, 4, "", {})


def test_pass_at_k_counts_only_the_graded_rollouts_and_says_how_many_failed(author_client, api, half_failed_batch):
    summary = summary_line(grading_part(author_client, half_failed_batch))
    assert "2 grading failed" in summary and "pass@1 1.00" in summary and "too easy" in summary and "not counted" in summary
    panel = re.sub(r"\s+", " ", difficulty_part(author_client, half_failed_batch))
    assert "2 of 2 passed" in panel and "too easy" in panel and "2 rollouts could not be graded" in panel
    body = api.get(f"/api/batches/{half_failed_batch.pk}/difficulty/").json()
    assert (body["n"], body["c"], body["grading_failed"], body["band"]) == (2, 2, 2, "too easy")
    assert body["pass_at_k"] == {"1": 1.0, "2": 1.0}


# --- 3. A failed grade can be tried again -------------------------------------------------------------------

def test_regrade_retries_failed_grades(team, failed_batch, fake_llm, django_capture_on_commit_callbacks):
    fake_llm.responder = judge(fails=lambda answer: False)  # the judge model works again
    with django_capture_on_commit_callbacks(execute=False) as queued:
        grades = batch_regrade(batch=failed_batch, user=team.author)
    assert queued and len(grades) == 4 and {g.status for g in grades} == {GradeStatus.QUEUED}
    assert set(Grade.objects.filter(rollout__batch=failed_batch).values_list("status", "attempts", "error")) == {
        (GradeStatus.QUEUED, 0, "")
    }
    run_pending_grades()
    assert list(Grade.objects.filter(rollout__batch=failed_batch).order_by().values_list("status", "passed").distinct()) == [
        (GradeStatus.GRADED, True)
    ]


def test_retry_failed_grades_from_the_batch_page(author_client, failed_batch, fake_llm, django_capture_on_commit_callbacks):
    page = author_client.get(reverse("batch-quality", args=[failed_batch.pk])).content.decode()
    url = reverse("batch-retry-failed", args=[failed_batch.pk])
    button = re.search(r'<form[^>]*hx-post="' + re.escape(url) + r'"[^>]*>.*?</form>', page, re.S).group(0)
    assert 'method="post"' in button and 'hx-target="#q-grading"' in button and "Retry failed grades" in button
    fake_llm.responder = judge(fails=lambda answer: False)
    with django_capture_on_commit_callbacks(execute=False):
        response = author_client.post(url, {"rubric": "1"}, **HX)
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<section class="card" id="q-grading"')
    assert "4 grading…" in summary_line(html) and 'hx-trigger="every 2s"' in html
    run_pending_grades()
    html = grading_part(author_client, failed_batch)
    assert "grading failed" not in summary_line(html) and "Retry failed grades" not in html
    assert "4 of 4 graded" in summary_line(html) and "too easy" in html


def test_retry_failed_grades_is_for_authors_and_a_plain_post_redirects(client, team, failed_batch, django_capture_on_commit_callbacks):
    url = reverse("batch-retry-failed", args=[failed_batch.pk])
    client.force_login(team.reviewer)
    assert "Retry failed grades" not in client.get(reverse("batch-quality", args=[failed_batch.pk])).content.decode()
    refused = client.post(url, **HX)
    assert refused.status_code in (403, 422) and "cannot edit content" in refused.content.decode()
    assert set(Grade.objects.filter(rollout__batch=failed_batch).values_list("status", flat=True)) == {GradeStatus.FAILED}
    client.force_login(team.author)
    with django_capture_on_commit_callbacks(execute=False):
        plain = client.post(url)
    assert plain.status_code == 302 and Grade.objects.filter(rollout__batch=failed_batch, status=GradeStatus.QUEUED).count() == 4


def test_retry_failed_grades_through_the_api(api, team, other_team, failed_batch, fake_llm, django_capture_on_commit_callbacks):
    url = f"/api/batches/{failed_batch.pk}/retry-failed-grades/"
    reviewer = APIClient()
    reviewer.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=team.reviewer).key}")
    assert reviewer.post(url, {}, format="json").status_code in (400, 403)
    outsider = APIClient()
    outsider.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=other_team.author).key}")
    assert outsider.post(url, {}, format="json").status_code == 404
    fake_llm.responder = judge(fails=lambda answer: False)
    with django_capture_on_commit_callbacks(execute=False):
        response = api.post(url, {}, format="json")
    assert response.status_code == 202 and (response.json()["retried"], response.json()["pending"]) == (4, 4)
    run_pending_grades()
    grades = api.get(f"/api/batches/{failed_batch.pk}/grades/").json()["grades"]
    assert [(g["status"], g["passed"]) for g in grades] == [("graded", True)] * 4
    assert api.post(url, {}, format="json").json()["retried"] == 0  # nothing failed any more
    schema = APIClient().get("/api/schema/?format=json").json()["paths"]["/api/batches/{id}/retry-failed-grades/"]["post"]
    assert schema["summary"] and {"202", "400", "403", "404"} <= set(schema["responses"])


# --- 4. Errors name criteria by the number the author sees ------------------------------------------------

def test_a_grade_error_names_the_criterion_by_its_number_in_the_rubric(author_client, api, team, world, endpoint, fake_llm,
                                                                         django_capture_on_commit_callbacks):
    env_task = demo_task(team, world, [("Draft one", 1, {"check": "contains", "value": "x"}),
                                       ("Draft two", 1, {"check": "contains", "value": "y"}),
                                       ("Mentions the price", 1, {"check": "contains", "value": "price"})])
    for text in ("Draft one", "Draft two"):  # deleted: the stored positions of the rest keep growing
        rubric = env_task.rubric_versions.get()
        authoring_services.criterion_delete(criterion=rubric.criteria.get(text=text), user=team.author, base_revision=rubric.revision)
    rubric = env_task.rubric_versions.get()
    authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text="Matches a broken pattern",
                                     points=1, tag="important", grader_kind="check", grader_config={"check": "regex", "pattern": "("})
    assert list(rubric.criteria.values_list("position", flat=True)) == [3, 4]  # shown as 1 and 2
    editor = author_client.get(reverse("task-editor", args=[env_task.pk])).content.decode()
    assert re.search(r"<td>2</td>\s*<td>Matches a broken pattern", editor)
    batch = graded_batch(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks, answers=["The price is $12m."])
    grade = api.get(f"/api/batches/{batch.pk}/grades/").json()["grades"][0]
    assert grade["status"] == "grading_failed" and grade["error"].startswith("criterion 2: ") and "criterion 4" not in grade["error"]
    assert [v["number"] for v in grade["verdicts"]] == [1, 2]
    page = author_client.get(reverse("batch-quality", args=[batch.pk])).content.decode()
    assert "criterion 2: The regular expression is invalid" in page and "criterion 4" not in page


# --- 5. No expert marks, no figure -------------------------------------------------------------------------

def cells(html: str, criterion) -> list[str]:
    row = re.search(rf'<tr id="q-agreement-{criterion.pk}">(.*?)</tr>', html, re.S).group(1)
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def test_without_expert_marks_the_agreement_table_shows_no_figure(author_client, api, team, world, endpoint, fake_llm,
                                                                   django_capture_on_commit_callbacks):
    env_task = demo_task(team, world, JUDGED)
    batch = graded_batch(
        env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks, answers=[GOOD, BAD], judge=judge(lambda a: False)
    )
    criterion = batch.rubric_version.criteria.get()
    page = author_client.get(reverse("batch-quality", args=[batch.pk])).content.decode()
    row = cells(page.split('id="q-agreement-table"', 1)[1], criterion)
    assert row[-4:] == ["—", "—", "—", "—"] and "no expert marks yet" in " ".join(row)
    assert "1.00" not in " ".join(row) and "100" not in " ".join(row)
    panel = author_client.get(reverse("task-verifier", args=[env_task.pk]) + "?part=agreement", **HX).content.decode()
    row = cells(panel, criterion)
    assert row[-4:] == ["—", "—", "—", "—"] and "no expert marks yet" in " ".join(row)
    body = api.get(f"/api/batches/{batch.pk}/agreement/").json()[0]
    assert (body["expert_marks"], body["precision"], body["recall"], body["f1"], body["stability"]) == (0, None, None, None, None)


def test_with_a_mark_the_figures_come_back(author_client, team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    env_task = demo_task(team, world, JUDGED)
    batch = graded_batch(
        env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks, answers=[GOOD, BAD], judge=judge(lambda a: False)
    )
    criterion, first = batch.rubric_version.criteria.get(), batch.rollouts.get(index=0)
    author_client.post(
        reverse("batch-expert-verdict", args=[batch.pk]), {"rollout": first.pk, "criterion": criterion.pk, "verdict": "met"}, **HX
    )
    row = cells(author_client.get(reverse("batch-quality", args=[batch.pk]) + "?part=agreement", **HX).content.decode(), criterion)
    assert row[-4:-1] == ["1.00", "1.00", "1.00"] and "no expert marks yet" not in " ".join(row)
    assert row[-1] == "—"  # one judge sample per verdict: nothing to measure the judge's stability by
