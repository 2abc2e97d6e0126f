"""The probe suite on the Verifier panel, end to end through the client and checked against the
database: a flagged probe shows the criteria it fooled with a fix for each; the fix applied
from the page makes a new rubric version; a second run comes out clear; the run keeps its
settings; the probe status is there for the task page (and a reviewer's); and the ranking
check names the criteria that reward the answers the expert ranked lowest."""

import re

import pytest
from django.urls import reverse

from authoring import services as authoring_services
from rollouts.grading.services import grade_execute
from rollouts.models import Grade, GradeStatus, ProbeRun
from tests.grading.planted.judge import ScriptedJudge, judge_by_rules, value_rule
from tests.grading.planted.run import evaluate
from tests.grading.planted.tasks import HR, TASKS
from verification.selectors import probe_status

HX = {"HTTP_HX_REQUEST": "true"}
REFERENCE = "The purchase price is $48.5 million."


@pytest.fixture
def price_task(team, world, fake_llm):
    """One LLM-judged criterion that names no value: any price meets it (the judge reads it literally)."""
    fake_llm.responder = judge_by_rules(value_rule)
    env_task = authoring_services.env_task_create(world=world, user=team.author, title="Price",
                                                  prompt="Read the SPA and state the purchase price.", reference_answer=REFERENCE)
    rubric = env_task.rubric_versions.get()
    authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text="States the purchase price",
                                     points=4, tag="essential")
    return env_task


@pytest.fixture
def author_client(client, team):
    client.force_login(team.author)
    return client


def grade_all() -> None:
    for grade in Grade.objects.filter(status=GradeStatus.QUEUED).order_by("pk"):
        grade_execute(grade_id=grade.pk)


def on_task_page(env_task) -> dict:
    return {**HX, "HTTP_HX_CURRENT_URL": "http://testserver" + reverse("task-editor", args=[env_task.pk])}


def test_a_flagged_probe_offers_a_fix_that_makes_a_new_rubric_version_and_the_rerun_comes_out_clear(author_client, price_task, endpoint):
    url = reverse("task-probes", args=[price_task.pk])
    author_client.post(url, {"judge_endpoint": endpoint.pk}, **HX)
    grade_all()
    html = author_client.get(url, **on_task_page(price_task)).content.decode()
    run = ProbeRun.objects.get(env_task=price_task)
    near_miss = run.answers.get(kind="near_miss")
    assert "1 flagged" in html and f'<tr id="q-probe-{near_miss.pk}" class="q-flagged">' in html
    fix = re.search(rf'<tr class="q-fix-row" id="q-probe-{near_miss.pk}-fix">(.*?)</td></tr>', html, re.S).group(1)
    assert "The near miss said $53.4 million where the reference answer says $48.5 million" in fix
    suggested = "States the purchase price: $48.5 million, given as the answer"
    pitfall = "Gives $53.4 million as the purchase price (the reference answer gives $48.5 million)"
    assert suggested in fix and "Add this pitfall" in fix and pitfall in fix
    criterion = price_task.rubric_versions.get().criteria.get()
    form = re.search(rf'<form method="post" action="{reverse("criterion-row", args=[criterion.pk])}"'
                     r'[^>]*hx-target="#rubric"[^>]*>(.*?)</form>', fix, re.S).group(1)
    data = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form))
    assert data["text"].startswith(suggested) and (data["points"], data["tag"]) == ("4", "essential")

    # The author takes the suggestion: the probes froze version 1, so the fix is version 2.
    import html as html_lib

    applied = author_client.post(reverse("criterion-row", args=[criterion.pk]), {k: html_lib.unescape(v) for k, v in data.items()}, **HX)
    assert applied.status_code == 200 and applied["HX-Trigger"] == "criteria-changed"
    current = price_task.rubric_versions.order_by("-number").first()
    assert current.number == 2 and current.criteria.get().text.startswith(suggested)
    stale = author_client.get(url, **on_task_page(price_task)).content.decode()
    assert "The rubric has changed since this run" in stale and "(on version 1)" in stale

    # Run again: the near miss no longer passes for the right answer, nothing is flagged.
    author_client.post(url, {"judge_endpoint": endpoint.pk}, **HX)
    grade_all()
    html = author_client.get(url, **on_task_page(price_task)).content.decode()
    assert 'id="q-probe-status">No probe flagged<' in html and "none flagged" in html and "q-fix-row" not in html
    status = probe_status(env_task=price_task)
    assert (status["state"], status["rubric_number"], status["stale"], status["reference_fails"]) == ("clear", 2, False, False)


def test_adding_the_suggested_pitfall_adds_a_negative_criterion(author_client, price_task, endpoint):
    url = reverse("task-probes", args=[price_task.pk])
    author_client.post(url, {"judge_endpoint": endpoint.pk}, **HX)
    grade_all()
    html = author_client.get(reverse("task-verifier", args=[price_task.pk])).content.decode()  # the Verifier page of its own: plain forms
    near_miss = ProbeRun.objects.get(env_task=price_task).answers.get(kind="near_miss")
    pitfall = re.search(rf'id="q-pitfall-{near_miss.pk}">(.*?)</div>', html, re.S).group(1)
    assert "hx-post" not in pitfall
    data = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', pitfall))
    response = author_client.post(reverse("criterion-add", args=[price_task.pk]), data)
    assert response.status_code == 302 and response["Location"] == reverse("task-editor", args=[price_task.pk])
    added = price_task.rubric_versions.order_by("-number").first().criteria.order_by("position").last()
    pitfall = "Gives $53.4 million as the purchase price (the reference answer gives $48.5 million)"
    assert (added.text, added.points, added.tag) == (pitfall, -4, "pitfall")


def test_the_run_keeps_its_settings_and_refuses_impossible_ones(author_client, price_task, endpoint, settings):
    url = reverse("task-probes", args=[price_task.pk])
    settings.PROBE_FLAG_SCORE = 0.6
    form = author_client.get(reverse("task-verifier", args=[price_task.pk])).content.decode()
    assert re.search(r'name="cheats_per_kind" value="2"', form) and re.search(r'name="flag_score" value="0.6"', form)
    assert "or scores 0.60 or more, is flagged" in form  # the text says what a new run will use, not a fixed 0.5
    author_client.post(url, {"judge_endpoint": endpoint.pk, "cheat_endpoint": endpoint.pk, "cheats_per_kind": 3, "flag_score": 0.8}, **HX)
    run = ProbeRun.objects.get()
    assert (run.cheats_per_kind, run.flag_score, run.status) == (3, 0.8, "queued")
    refused = author_client.post(url, {"judge_endpoint": endpoint.pk, "cheats_per_kind": 9}, **HX)
    assert refused.status_code == 422 and "Cheats per kind" in refused.content.decode() and ProbeRun.objects.count() == 1
    # No cheat model, or none to write: no cheat job, and the run says so.
    author_client.post(url, {"judge_endpoint": endpoint.pk, "cheat_endpoint": endpoint.pk, "cheats_per_kind": 0}, **HX)
    latest = ProbeRun.objects.order_by("-pk").first()
    assert (latest.cheat_endpoint, latest.status, latest.flag_score) == (None, "ready", 0.6)


def test_the_probe_status_follows_the_run(team, price_task, endpoint, django_capture_on_commit_callbacks):
    from verification.services import probe_run_start

    assert probe_status(env_task=price_task)["state"] == "none"
    with django_capture_on_commit_callbacks(execute=False):
        probe_run_start(env_task=price_task, user=team.author, judge_endpoint=endpoint)
    assert probe_status(env_task=price_task)["state"] == "running"
    grade_all()
    status = probe_status(env_task=price_task)
    assert (status["state"], status["label"], status["flagged"]) == ("flagged", "1 probe flagged", 1)
    rubric = price_task.rubric_versions.get()
    authoring_services.criterion_add(env_task=price_task, user=team.author, base_revision=rubric.revision, text="Cites the SPA", points=1)
    assert probe_status(env_task=price_task)["stale"]  # probed version 1; the task is at version 2 now


def test_a_probe_that_could_not_be_graded_is_not_reported_clear(team, price_task, endpoint, fake_llm, django_capture_on_commit_callbacks):
    from tests.fake_llm import Reply
    from verification.services import probe_run_start

    fake_llm.responder = lambda request: Reply(content="not JSON")
    with django_capture_on_commit_callbacks(execute=False):
        probe_run_start(env_task=price_task, user=team.author, judge_endpoint=endpoint)
    grade_all()
    assert probe_status(env_task=price_task)["state"] == "not_graded"


@pytest.fixture
def ranked_weak_hr(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    judge = ScriptedJudge(TASKS)
    fake_llm.responder = judge.responder
    return evaluate(HR, "weak", world=world, author=team.author, endpoint=endpoint, judge=judge,
                    quiet=lambda: django_capture_on_commit_callbacks(execute=False))


def test_the_verifier_page_shows_every_ranking_warning_and_the_criteria_that_cause_them(author_client, ranked_weak_hr):
    html = author_client.get(reverse("batch-quality", args=[ranked_weak_hr.batch.pk])).content.decode()
    text = html.split('id="q-low-agreement">', 1)[1].split('id="q-ranking-culprits"', 1)[0]
    assert 'data-kind="ceiling"' in text and 'data-kind="no_separation"' in text and 'data-kind="probe_passes"' in text
    assert "Most answers get the maximum score (5 of 6)" in text
    culprits = re.search(r'id="q-ranking-culprits">(.*?)</ul>', html, re.S).group(1)
    assert (
        "Addresses her notice entitlement" in culprits and "met by 2 of the 2 you ranked lowest, 2 of the 2 you ranked highest" in culprits
    )


def test_the_ranking_api_gives_the_warnings_and_the_culprits(team, ranked_weak_hr):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=team.author)[0].key}")
    body = api.get(f"/api/batches/{ranked_weak_hr.batch.pk}/ranking/").json()["agreement"]
    assert {"ceiling", "no_separation", "probe_passes"} <= {w["kind"] for w in body["warnings"]}
    assert body["culprits"][0]["text"] == "Addresses her notice entitlement" and body["culprits"][0]["low_met"] == 2


def test_a_reviewer_sees_the_probe_status_of_the_submitted_rubric(client, team, price_task, endpoint, django_capture_on_commit_callbacks):
    from reviews.services import submission_create
    from verification.services import probe_run_start

    with django_capture_on_commit_callbacks(execute=False):
        probe_run_start(env_task=price_task, user=team.author, judge_endpoint=endpoint)
    grade_all()
    submission = submission_create(env_task=price_task, user=team.author)
    client.force_login(team.reviewer)
    html = client.get(reverse("submission-review", args=[submission.pk])).content.decode()
    status = re.search(r'<span [^>]*id="evidence-probe-status">(.*?)</span>', html, re.S).group(1)
    assert "1 probe flagged" in status and 'id="evidence-no-probes"' not in html


def test_a_reviewer_is_told_when_the_task_was_never_probed(client, team, price_task):
    from reviews.services import submission_create

    submission = submission_create(env_task=price_task, user=team.author)
    client.force_login(team.reviewer)
    html = client.get(reverse("submission-review", args=[submission.pk])).content.decode()
    status = re.search(r'<span [^>]*id="evidence-probe-status">(.*?)</span>', html, re.S).group(1)
    assert "Not probed on this rubric version" in status and "The author has not run the probes on rubric version 1" in html


def test_probes_judged_by_the_scripted_sample_model_prove_nothing_and_say_so(author_client, price_task):
    """The sample judge marks criteria at random-looking placeholders (here: even the reference
    fails), so nothing is flagged: the panel must not show a green "none flagged", the status
    names the sample judge, a reviewer is told to ask for a real judge, and the probes gate
    does not pass."""
    from llm.models import EndpointKind, ModelEndpoint
    from reviews.models import ReviewPolicy
    from reviews.selectors.gates import submit_gates

    sample = ModelEndpoint.objects.create(name="Sample", kind=EndpointKind.SCRIPTED, model="")
    url = reverse("task-probes", args=[price_task.pk])
    author_client.post(url, {"judge_endpoint": sample.pk}, **HX)
    grade_all()
    html = author_client.get(url, **on_task_page(price_task)).content.decode()
    assert 'id="q-probe-status">Judged by the scripted sample model: proves nothing<' in html
    assert 'class="q-good">none flagged' not in html and 'id="q-probes-sample"' in html
    status = probe_status(env_task=price_task)
    assert status["state"] == "sample"

    policy = ReviewPolicy(project=price_task.project, gate_probes=True)
    gates = submit_gates(env_task=price_task, rubric_version=status["run"].rubric_version, policy=policy)
    gate = next(g for g in gates if g.key == "probes")
    assert not gate.passed and "scripted sample model" in gate.measured


def test_a_reference_answer_that_fails_the_rubric_is_not_a_clear_run(author_client, price_task, endpoint):
    """The reference answer fails the rubric (the judge finds no price in it): no probe can
    pass either, so "no probe flagged" would mislead."""
    type(price_task).objects.filter(pk=price_task.pk).update(reference_answer="It is in the SPA.")
    url = reverse("task-probes", args=[price_task.pk])
    author_client.post(url, {"judge_endpoint": endpoint.pk}, **HX)
    grade_all()
    status = probe_status(env_task=price_task)
    assert (status["state"], status["label"], status["reference_fails"]) == (
        "reference_fails", "The reference answer fails: no probe can pass", True)
    html = author_client.get(url, **on_task_page(price_task)).content.decode()
    assert 'class="q-good">none flagged' not in html and 'id="q-probe-control-fails"' in html
