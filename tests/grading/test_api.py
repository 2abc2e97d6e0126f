"""The verifier-quality API, end to end through the client, checked against the database."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from rollouts.models import ExpertVerdict, Grade, ProbeRun, Ranking
from tests.grading.test_pages import NASTY, demo, run_pending_grades, tighten  # noqa: F401 - demo is a fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def api_for():
    def make(user) -> APIClient:
        token, _ = Token.objects.get_or_create(user=user)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


def test_grades_of_a_batch_with_their_verdicts(api_for, team, demo):  # noqa: F811
    body = api_for(team.author).get(f"/api/batches/{demo.batch.pk}/grades/").json()
    assert body["rubric_version"]["number"] == 1 and body["graded_versions"] == [1]
    assert [g["score"] for g in body["grades"]] == pytest.approx([1.0, 1.0, 1.0, 5 / 6])
    first = body["grades"][0]
    assert (first["status"], first["passed"], first["met_points"], first["positive_points"]) == ("graded", True, 6, 6)
    assert [(v["text"], v["met"], v["expert_met"]) for v in first["verdicts"]] == [
        ("States the purchase price of $12m", True, None), ("Mentions the price", True, None)]
    assert first["verdicts"][0]["rationale"] == "The answer contains '12'."


def test_grades_refuse_an_unknown_version_or_parameter_and_hide_other_projects(api_for, team, other_team, demo):  # noqa: F811
    api = api_for(team.author)
    assert api.get(f"/api/batches/{demo.batch.pk}/grades/?rubric=9").status_code == 400
    assert "Unknown query parameter" in api.get(f"/api/batches/{demo.batch.pk}/grades/?limit=1").json()["detail"]
    assert api_for(other_team.admin).get(f"/api/batches/{demo.batch.pk}/grades/").status_code == 404
    assert APIClient().get(f"/api/batches/{demo.batch.pk}/grades/").status_code == 401


def test_expert_verdicts_and_agreement(api_for, team, demo):  # noqa: F811
    api = api_for(team.reviewer)  # reviewers judge trajectories
    criterion = demo.rubric.criteria.get(position=2)
    url = f"/api/batches/{demo.batch.pk}/expert-verdicts/"
    response = api.post(url, {"rollout": demo.rollouts[0].pk, "criterion": criterion.pk, "met": False}, format="json")
    assert response.status_code == 200 and response.json() == {
        "rollout": demo.rollouts[0].pk,
        "criterion": criterion.pk,
        "met": False,
        "judge_met": True,
    }
    assert ExpertVerdict.objects.get(expert=team.reviewer).met is False
    rows = {r["text"]: r for r in api.get(f"/api/batches/{demo.batch.pk}/agreement/").json()}
    row = rows["Mentions the price"]
    assert (row["graded"], row["expert_marks"], row["fp"], row["fn"], row["tp"], row["tn"]) == (4, 1, 1, 0, 2, 1)
    assert (
        row["precision"] == pytest.approx(2 / 3) and row["recall"] == 1.0 and row["stability"] is None
    )  # a check: no judge samples to disagree
    assert api.post(url, {"rollout": demo.rollouts[0].pk, "criterion": criterion.pk, "met": None}, format="json").json()["met"] is None
    assert not ExpertVerdict.objects.exists()
    assert api.post(url, {"rollout": 10**9, "criterion": criterion.pk, "met": True}, format="json").status_code == 404


def test_ranking_answers_tau_and_rho(api_for, team, demo):  # noqa: F811
    api = api_for(team.author)
    ids = [r.pk for r in demo.rollouts]
    url = f"/api/batches/{demo.batch.pk}/ranking/"
    assert api.get(url).json() == {"order": [], "rubric_version": 1, "agreement": None}
    body = api.put(url, {"order": ids[::-1]}, format="json").json()
    assert body["order"] == ids[::-1] and Ranking.objects.get(expert=team.author).order == ids[::-1]
    assert body["agreement"]["tau"] == pytest.approx(-3 / 18**0.5) and body["agreement"]["rho"] == pytest.approx(-0.7745966692)
    assert "Low agreement" in body["agreement"]["warning"] and len(body["agreement"]["points"]) == 4
    assert api.get(url).json() == body
    refused = api.put(url, {"order": ids[:2]}, format="json")
    assert refused.status_code == 400 and "exactly once" in refused.json()["detail"]


def test_regrade_then_difficulty_and_grades_under_the_new_version(api_for, team, demo, django_capture_on_commit_callbacks):  # noqa: F811
    tighten(demo, team)
    refused = api_for(team.reviewer).post(f"/api/batches/{demo.batch.pk}/regrade/", {}, format="json")
    assert refused.status_code == 403 and not Grade.objects.filter(rubric_version__number=2).exists()
    api = api_for(team.author)
    with django_capture_on_commit_callbacks(execute=False):
        response = api.post(f"/api/batches/{demo.batch.pk}/regrade/", {}, format="json")
    assert response.status_code == 202 and (
        response.json()["rubric_version"]["number"],
        response.json()["grades"],
        response.json()["pending"],
    ) == (2, 4, 4)
    run_pending_grades()
    difficulty = api.get(f"/api/batches/{demo.batch.pk}/difficulty/?rubric=2").json()
    assert (difficulty["n"], difficulty["c"], difficulty["pending"], difficulty["band"]) == (4, 2, 0, "learnable")
    assert difficulty["pass_at_k"] == pytest.approx({"1": 0.5, "2": 5 / 6, "4": 1.0})
    assert api.get(f"/api/batches/{demo.batch.pk}/difficulty/").json()["rubric_version"]["number"] == 2  # the newest graded by default
    old = api.get(f"/api/batches/{demo.batch.pk}/difficulty/?rubric=1").json()
    assert (old["c"], old["band"]) == (4, "too easy")
    scores = [g["score"] for g in api.get(f"/api/batches/{demo.batch.pk}/grades/?rubric=2").json()["grades"]]
    assert scores == pytest.approx([1.0, 1.0, 1 / 6, 0.0])


def test_probe_runs_flag_the_criteria_they_fool(api_for, team, demo, endpoint):  # noqa: F811
    api = api_for(team.author)
    started = api.post(f"/api/tasks/{demo.task.pk}/probe-runs/", {"judge_endpoint": endpoint.pk}, format="json")
    assert started.status_code == 201 and started.json()["pending"] == 9 and len(started.json()["probes"]) == 9
    assert started.json()["status"] == "ready"  # no cheat model: nothing to write
    run_pending_grades()
    body = api.get(f"/api/probe-runs/{started.json()['id']}/").json()
    assert (body["pending"], body["flagged"], body["rubric_version"]["number"], body["flag_score"]) == (0, 1, 1, 0.5)
    hedging = next(p for p in body["probes"] if p["kind"] == "hedging")
    price = demo.rubric.criteria.get(position=1)
    assert hedging["flagged"] and hedging["fooled"][0] == {"id": price.pk, "text": "States the purchase price of $12m"}
    assert hedging["detail"]["fact"] == "$12,000,000" and hedging["pitfall"]["points"] < 0
    assert (
        hedging["fixes"][0]["criterion"] == price.pk and hedging["fixes"][0]["text"] is None
    )  # a check: its settings change, not its text
    control = next(p for p in body["probes"] if p["control"])
    assert (control["kind"], control["passed"], control["flagged"]) == ("reference", True, False)
    assert api.post(f"/api/tasks/{demo.task.pk}/probe-runs/", {"judge_endpoint": 10**9}, format="json").status_code == 400
    refused = api_for(team.reviewer).post(f"/api/tasks/{demo.task.pk}/probe-runs/", {"judge_endpoint": endpoint.pk}, format="json")
    assert refused.status_code == 403 and ProbeRun.objects.count() == 1


def test_probe_answers_come_back_exactly_as_written(api_for, team, demo, endpoint, fake_llm):  # noqa: F811
    from tests.fake_llm import Reply
    from verification.services import probe_run_write_cheats

    fake_llm.responder = lambda request: Reply(structured={"answers": [NASTY]})
    api = api_for(team.author)
    asked = len(fake_llm.requests)
    started = api.post(
        f"/api/tasks/{demo.task.pk}/probe-runs/", {"judge_endpoint": endpoint.pk, "cheat_endpoint": endpoint.pk}, format="json"
    )
    # The cheat is written on the grading queue, not in the request: the answer says so and no model was asked yet.
    assert started.status_code == 201 and (started.json()["status"], len(started.json()["probes"])) == ("queued", 9)
    assert len(fake_llm.requests) == asked
    probe_run_write_cheats(probe_run_id=started.json()["id"])
    body = api.get(f"/api/probe-runs/{started.json()['id']}/").json()
    assert (body["status"], body["error"], body["pending"]) == ("ready", "", 14)  # one cheat of each of the five kinds
    assert next(p for p in body["probes"] if p["kind"] == "model_cheat")["answer"] == NASTY  # JSON, not HTML: escaping is the reader's


def test_rubric_settings_through_the_api(api_for, team, demo, other_team):  # noqa: F811
    api = api_for(team.author)
    url = f"/api/tasks/{demo.task.pk}/rubric/settings/"
    current = api.get(url).json()
    assert (current["number"], current["pass_threshold"], current["judge_samples"], current["frozen"]) == (1, 0.7, 1, True)
    changed = api.patch(url, {"revision": current["revision"], "judge_samples": 3}, format="json")
    assert changed.status_code == 200
    assert (changed.json()["number"], changed.json()["judge_samples"], changed.json()["pass_threshold"],
            changed.json()["frozen"]) == (2, 3, 0.7, False)
    stale = api.patch(url, {"revision": current["revision"], "pass_threshold": 0.5}, format="json")
    assert stale.status_code == 409 and stale.json()["current_revision"] == changed.json()["revision"]
    assert api.patch(url, {"revision": changed.json()["revision"], "pass_threshold": 2}, format="json").status_code == 400
    assert api.patch(url, {"pass_threshold": 0.5}, format="json").status_code == 400  # revision is required
    assert (
        api_for(team.reviewer).patch(url, {"revision": changed.json()["revision"], "pass_threshold": 0.5}, format="json").status_code == 403
    )
    assert api_for(other_team.author).get(url).status_code == 404
    assert demo.task.rubric_versions.get(number=2).pass_threshold == 0.7
