"""Cancelling the long grading jobs: a regrade of a batch, and a probe run (its cheats and its
grades). The grades already in are kept, the rest is never done and ends cancelled (not
failed); the pages show the progress bar and the Cancel control while it runs, then Cancelled
with how many finished, and Resume grading takes it up where it stopped."""

import importlib
import re

import pytest
from django.db import connection
from django.db.migrations import RunPython
from django.db.migrations.loader import MigrationLoader
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.exceptions import ApplicationError, PermissionRefused
from rollouts.grading import services as grading
from rollouts.grading.services import batch_failed_grades_retry, batch_grading_cancel, batch_regrade, grade_execute
from rollouts.models import Grade, GradeStatus, ProbeRun, ProbeRunStatus
from tests.grading.test_pages import HX, demo, run_pending_grades, tighten  # noqa: F401 - demo is a fixture
from tests.grading.test_quality import cheats_by_kind
from verification import services as verification_services
from verification.selectors import criterion_agreement, difficulty
from verification.services import probe_run_cancel, probe_run_start, probe_run_write_cheats


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


# --- A regrade ------------------------------------------------------------------------------------------

def test_a_cancelled_regrade_stops_before_the_next_criterion_and_keeps_what_was_graded(
    team, demo, monkeypatch, django_capture_on_commit_callbacks  # noqa: F811
):
    v2 = tighten(demo, team)
    with django_capture_on_commit_callbacks(execute=False):
        batch_regrade(batch=demo.batch, user=team.author)
    first, *others = Grade.objects.filter(rubric_version=v2).order_by("rollout__index")
    checks = []
    run_check = grading.run_check

    def author_cancels_during_the_first_check(config, attempt):
        checks.append(config)
        if len(checks) == 1:
            batch_grading_cancel(batch=demo.batch, user=team.author, rubric_version=v2)
        return run_check(config, attempt)

    monkeypatch.setattr(grading, "run_check", author_cancels_during_the_first_check)
    grade_execute(grade_id=first.pk)  # the worker grading the first rollout when the author cancels
    for grade in others:
        grade_execute(grade_id=grade.pk)  # their messages arrive: nothing runs

    assert len(checks) == 1  # v2 has two criteria: the second was never checked, nor any other rollout's
    first.refresh_from_db()
    assert (first.status, first.error, first.verdicts.count()) == (GradeStatus.CANCELLED, "", 1)  # its verdict is kept
    assert first.graded_at is not None  # it has ended: nothing polls for it
    assert set(Grade.objects.filter(rubric_version=v2).values_list("status", "error")) == {(GradeStatus.CANCELLED, "")}
    assert set(Grade.objects.filter(rubric_version=demo.rubric).values_list("status", flat=True)) == {GradeStatus.GRADED}  # v1 untouched
    with pytest.raises(ApplicationError, match="nothing to cancel"):
        batch_grading_cancel(batch=demo.batch, user=team.author, rubric_version=v2)

    # Cancelled grades are sent again like failed ones, and resume where they stopped.
    checks.clear()
    monkeypatch.setattr(grading, "run_check", lambda config, attempt: checks.append(config) or run_check(config, attempt))
    with django_capture_on_commit_callbacks(execute=False):
        assert len(batch_failed_grades_retry(batch=demo.batch, user=team.author, rubric_version=v2)) == 4
    run_pending_grades()
    assert set(Grade.objects.filter(rubric_version=v2).values_list("status", flat=True)) == {GradeStatus.GRADED}
    assert len(checks) == 2 * 4 - 1  # the verdict reached before the cancel is kept, not asked again


def test_the_verifier_page_shows_the_grading_bar_and_cancel_then_cancelled(client, team, demo, django_capture_on_commit_callbacks):  # noqa: F811
    v2 = tighten(demo, team)
    client.force_login(team.author)
    with django_capture_on_commit_callbacks(execute=False):
        client.post(reverse("batch-regrade", args=[demo.batch.pk]), **HX)
    grade_execute(grade_id=Grade.objects.filter(rubric_version=v2).order_by("rollout__index").first().pk)
    part = reverse("batch-quality", args=[demo.batch.pk]) + "?part=grading&rubric=2&poll=1"
    html = client.get(part, **HX).content.decode()
    assert '<progress id="q-grading-progress" value="1" max="4"' in html and "1 of 4 grades in" in text(html)
    assert 'id="q-cancel-grading"' in html and 'hx-trigger="every 2s"' in html

    client.force_login(team.reviewer)
    refused = client.post(reverse("batch-grading-cancel", args=[demo.batch.pk]), {"rubric": 2}, **HX)
    assert refused.status_code == 403 and Grade.objects.filter(rubric_version=v2, status=GradeStatus.QUEUED).count() == 3
    assert 'id="q-cancel-grading"' not in client.get(part, **HX).content.decode()  # a reviewer sees the bar, not the control

    client.force_login(team.author)
    response = client.post(reverse("batch-grading-cancel", args=[demo.batch.pk]), {"rubric": 2}, **HX)
    html = response.content.decode()
    assert response.status_code == 200 and "every 2s" not in html.split(">", 1)[0]  # it stops polling
    assert "q-grading-progress" not in html and 'id="q-cancel-grading"' not in html
    assert "Cancelled: 1 of 4 graded before the cancel · 3 not graded." in text(html)
    assert html.count('<span class="badge q-st-cancelled">Cancelled</span>') == 3  # each rollout not graded says so
    summary = text(re.search(r'<p id="q-grade-summary">.*?</p>', html, re.S).group(0))
    assert "1 of 4 graded · 3 cancelled (not counted in pass@k)" in summary
    assert "failed" not in summary.lower() and "Grading failed" not in html  # the author cancelled: nothing failed
    assert '<div class="message q-retry" id="q-retry-box">' in html  # neutral, not an error box
    assert re.search(r'<button type="submit" id="q-retry-failed">Resume grading</button>', html)
    assert Grade.objects.filter(rubric_version=v2, status=GradeStatus.CANCELLED).count() == 3
    trials = client.get(reverse("batch-detail", args=[demo.batch.pk])).content.decode()
    assert trials.count("grading cancelled") == 3 and "grading failed" not in trials and "grading…" not in trials
    last = Grade.objects.filter(rubric_version=v2).order_by("rollout__index").last().rollout
    trajectory = client.get(reverse("rollout-detail", args=[last.pk])).content.decode()
    assert '<span class="badge q-st-cancelled">Cancelled</span>' in trajectory and 'id="rollout-grade-cancelled"' in trajectory
    assert 'id="rollout-grade-error"' not in trajectory and "not reached" in trajectory and "every 2s" not in trajectory

    # With a failed grade beside the cancelled ones, one action sends both, and says so.
    Grade.objects.filter(pk=Grade.objects.filter(rubric_version=v2, status=GradeStatus.CANCELLED).first().pk).update(
        status=GradeStatus.FAILED, error="criterion 1: broken check")
    html = client.get(part, **HX).content.decode()
    summary = text(re.search(r'<p id="q-grade-summary">.*?</p>', html, re.S).group(0))
    assert "1 grading failed · 2 cancelled (not counted in pass@k)" in summary
    assert '<div class="message error q-retry" id="q-retry-box">' in html
    assert '<button type="submit" id="q-retry-failed">Retry failed and cancelled grades</button>' in html

    # Retry: the three are graded, and the page no longer says cancelled.
    with django_capture_on_commit_callbacks(execute=False):
        resumed = client.post(reverse("batch-retry-failed", args=[demo.batch.pk]), {"rubric": 2}, **HX)
    assert resumed.status_code == 200 and 'hx-trigger="every 2s"' in resumed.content.decode()  # it polls again
    assert Grade.objects.filter(rubric_version=v2, status=GradeStatus.QUEUED).count() == 3
    run_pending_grades()
    html = client.get(part, **HX).content.decode()
    assert "4 of 4 graded" in text(html) and "cancelled" not in text(html).lower() and 'id="q-retry-box"' not in html


def test_a_cancelled_grade_counts_nowhere_in_pass_at_k_difficulty_or_agreement(
    client, team, demo, monkeypatch, django_capture_on_commit_callbacks  # noqa: F811
):
    v2 = tighten(demo, team)
    with django_capture_on_commit_callbacks(execute=False):
        batch_regrade(batch=demo.batch, user=team.author)
    grades = list(Grade.objects.filter(rubric_version=v2).order_by("rollout__index"))
    for grade in grades[:2]:
        grade_execute(grade_id=grade.pk)
    run_check = grading.run_check

    def author_cancels_during_the_check(config, attempt):
        batch_grading_cancel(batch=demo.batch, user=team.author, rubric_version=v2)
        return run_check(config, attempt)

    monkeypatch.setattr(grading, "run_check", author_cancels_during_the_check)
    grade_execute(grade_id=grades[2].pk)  # cancelled with one verdict reached; the fourth never starts
    assert [Grade.objects.get(pk=g.pk).status for g in grades] == [GradeStatus.GRADED] * 2 + [GradeStatus.CANCELLED] * 2
    assert grades[2].verdicts.count() == 1

    measured = difficulty(batch=demo.batch, rubric_version=v2)
    passed = Grade.objects.filter(pk__in=[g.pk for g in grades[:2]], passed=True).count()
    assert (measured["n"], measured["c"], measured["grading_cancelled"], measured["grading_failed"]) == (2, passed, 2, 0)
    assert [k for k, _ in measured["curve"]] == [1, 2]  # pass@4 would need the cancelled ones
    assert [row["graded"] for row in criterion_agreement(rubric_version=v2)] == [2, 2]  # the kept verdict is not a judgement
    client.force_login(team.author)
    html = client.get(reverse("batch-quality", args=[demo.batch.pk]) + "?rubric=2").content.decode()
    summary = text(re.search(r'<p id="q-grade-summary">.*?</p>', html, re.S).group(0))
    assert "2 of 4 graded · 2 cancelled (not counted in pass@k)" in summary and "over the 2 counted" in summary
    panel = text(client.get(reverse("task-verifier", args=[demo.task.pk]) + "?part=difficulty", **HX).content.decode())
    assert "The grading of 2 rollouts was cancelled: not counted in pass@k until they are graded" in panel
    assert "could not be graded" not in panel


def test_the_migration_turns_the_failed_with_the_cancel_reason_into_cancelled_and_back(demo):  # noqa: F811
    """rollouts 0011: a grade stored as failed with the cancel's reason becomes cancelled;
    any other failure stays failed; migrating back restores the old form. (Its data step is
    run on the historical models: SQLite cannot alter a schema inside the test's transaction.)"""
    loader = MigrationLoader(connection)
    migration = loader.get_migration("rollouts", "0011_grade_cancelled")
    convert = next(op for op in migration.operations if isinstance(op, RunPython))
    historical = loader.project_state(("rollouts", "0011_grade_cancelled")).apps
    reason = importlib.import_module(migration.__module__).CANCELLED_AS_FAILED
    assert reason == "Cancelled before it was graded." and convert.reversible  # what grades_cancel wrote before
    cancelled, broken, _, similar = Grade.objects.filter(rollout__batch=demo.batch).order_by("rollout__index")
    Grade.objects.filter(pk=cancelled.pk).update(status=GradeStatus.FAILED, error=reason)  # cancelled, as it was stored then
    Grade.objects.filter(pk=broken.pk).update(status=GradeStatus.FAILED, error="criterion 1: broken check")
    Grade.objects.filter(pk=similar.pk).update(status=GradeStatus.FAILED, error=reason + " Then the judge failed.")

    def states() -> list[tuple[str, str]]:
        return list(Grade.objects.filter(rollout__batch=demo.batch).order_by("rollout__index").values_list("status", "error"))

    others = [(GradeStatus.FAILED, "criterion 1: broken check"), (GradeStatus.GRADED, ""),
              (GradeStatus.FAILED, reason + " Then the judge failed.")]  # another failure, however like it, stays failed
    convert.code(historical, None)
    assert states() == [(GradeStatus.CANCELLED, ""), *others]
    convert.reverse_code(historical, None)
    assert states() == [(GradeStatus.FAILED, reason), *others]


# --- A probe run ----------------------------------------------------------------------------------------

def test_a_cancelled_probe_run_writes_no_more_cheats_and_grades_no_more_probes(
    team, demo, endpoint, fake_llm, monkeypatch, django_capture_on_commit_callbacks  # noqa: F811
):
    fake_llm.responder = cheats_by_kind
    with django_capture_on_commit_callbacks(execute=False):
        run = probe_run_start(env_task=demo.task, user=team.author, judge_endpoint=endpoint, cheat_endpoint=endpoint)
    built = list(Grade.objects.filter(probe__run=run).order_by("pk"))
    for grade in built[:3]:
        grade_execute(grade_id=grade.pk)
    with pytest.raises(PermissionRefused):
        probe_run_cancel(run=run, user=team.reviewer)
    ask = verification_services._ask_for_cheats
    asked = []

    def author_cancels_while_the_second_kind_is_written(*args):
        asked.append(args[-1])
        answers = ask(*args)
        if len(asked) == 2:
            assert probe_run_cancel(run=run, user=team.author) == len(built) - 3 + 2  # the 2 hedges written first are not graded either
        return answers

    monkeypatch.setattr(verification_services, "_ask_for_cheats", author_cancels_while_the_second_kind_is_written)
    calls_before = len(fake_llm.requests)  # (the demo batch's rollouts asked it too)
    with django_capture_on_commit_callbacks(execute=False):
        probe_run_write_cheats(probe_run_id=run.pk)
    run_pending_grades()

    assert asked == ["hedging", "near_miss"] and len(fake_llm.requests) - calls_before == 2  # three kinds never asked for
    run.refresh_from_db()
    assert run.status == ProbeRunStatus.READY and run.error == "Cancelled: 1 of 5 kinds of cheat were written; the others were not."
    assert [p.detail["aimed_at"] for p in run.answers.filter(kind="model_cheat")] == ["hedging", "hedging"]  # near misses dropped
    grades = Grade.objects.filter(probe__run=run)
    assert grades.filter(status=GradeStatus.GRADED).count() == 3  # graded before the cancel: kept
    assert grades.filter(status=GradeStatus.CANCELLED).count() == grades.count() - 3 and not grades.filter(status=GradeStatus.FAILED)


def test_the_probes_part_shows_the_bar_and_cancel_then_cancelled(client, team, demo, endpoint, django_capture_on_commit_callbacks):  # noqa: F811
    client.force_login(team.author)
    url = reverse("task-probes", args=[demo.task.pk])
    with django_capture_on_commit_callbacks(execute=False):
        client.post(url, {"judge_endpoint": endpoint.pk}, **HX)
    run = ProbeRun.objects.get(env_task=demo.task)
    for grade in Grade.objects.filter(probe__run=run).order_by("pk")[:2]:
        grade_execute(grade_id=grade.pk)
    html = client.get(url, **HX).content.decode()
    assert '<progress value="2" max="9"></progress>' in html and 'id="q-cancel-probes"' in html and 'hx-trigger="every 2s"' in html

    response = client.post(reverse("task-probes-cancel", args=[demo.task.pk]), **HX)
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="q-probes" class="q-block">')  # no more polling
    assert "<progress" not in html and 'id="q-cancel-probes"' not in html
    assert "Cancelled: 2 of 9 probes graded before the cancel · 7 not graded." in text(html)
    assert html.count('<span class="badge q-st-cancelled">Cancelled</span>') == 7 and "could not be graded" not in text(html)
    again = client.post(reverse("task-probes-cancel", args=[demo.task.pk]), **HX)
    assert again.status_code == 422 and "nothing to cancel" in again.content.decode()


def test_cancel_grading_and_probes_through_the_api(team, demo, endpoint, django_capture_on_commit_callbacks):  # noqa: F811
    def api(user) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
        return client

    v2 = tighten(demo, team)
    with django_capture_on_commit_callbacks(execute=False):
        batch_regrade(batch=demo.batch, user=team.author)
        run = probe_run_start(env_task=demo.task, user=team.author, judge_endpoint=endpoint)
    assert api(team.reviewer).post(f"/api/batches/{demo.batch.pk}/cancel-grading/", {}, format="json").status_code == 403
    response = api(team.author).post(f"/api/batches/{demo.batch.pk}/cancel-grading/", {}, format="json")  # the version a regrade queued
    assert response.status_code == 200 and response.json()["cancelled"] == 4 and response.json()["rubric_version"]["number"] == 2
    assert not Grade.objects.filter(rubric_version=v2, rollout__isnull=False, status__in=[GradeStatus.QUEUED, GradeStatus.RUNNING]).exists()
    assert Grade.objects.filter(probe__run=run, status=GradeStatus.QUEUED).count() == run.answers.count()  # not the probes
    grades = api(team.author).get(f"/api/batches/{demo.batch.pk}/grades/?rubric=2").json()["grades"]
    assert [g["status"] for g in grades] == ["cancelled"] * 4 and {g["error"] for g in grades} == {""}
    difficulty = api(team.author).get(f"/api/batches/{demo.batch.pk}/difficulty/?rubric=2").json()
    assert (difficulty["n"], difficulty["grading_failed"], difficulty["grading_cancelled"], difficulty["band"]) == (0, 0, 4, "")
    retried = api(team.author).post(f"/api/batches/{demo.batch.pk}/retry-failed-grades/", {"rubric_version": v2.pk}, format="json")
    assert retried.status_code == 202 and retried.json()["retried"] == 4
    assert Grade.objects.filter(rubric_version=v2, rollout__isnull=False, status=GradeStatus.QUEUED).count() == 4

    assert api(team.reviewer).post(f"/api/probe-runs/{run.pk}/cancel/").status_code == 403
    body = api(team.author).post(f"/api/probe-runs/{run.pk}/cancel/").json()
    assert (body["pending"], body["grading_failed"], body["grading_cancelled"]) == (0, 0, run.answers.count())
    assert {probe["status"] for probe in body["probes"]} == {"cancelled"}
    assert api(team.author).post(f"/api/probe-runs/{run.pk}/cancel/").status_code == 400  # nothing left to cancel
