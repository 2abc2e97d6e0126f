"""The verifier's pages: the Verifier panel of the task page and the batch quality page,
full and as htmx parts, checked against the database. Batches are built through the
services with the fake model server as the agent and deterministic checks as graders."""

import json
import re
from types import SimpleNamespace

import pytest
from django.urls import reverse

from authoring import services as authoring_services
from authoring.forms import CHECK_KINDS
from authoring.models import Criterion, RubricVersion
from core.exceptions import ApplicationError
from rollouts import services as rollout_services
from rollouts.agent import rollout_execute
from rollouts.grading.checks import KINDS
from rollouts.grading.services import grade_execute
from rollouts.models import ExpertVerdict, Grade, GradeStatus, ProbeRun, Ranking
from tests.fake_llm import Reply
from verification.views import plots

HX = {"HTTP_HX_REQUEST": "true"}
WEAK = [("States the purchase price of $12m", 5, {"check": "contains", "value": "12"}),
        ("Mentions the price", 1, {"check": "contains", "value": "price"})]
ANSWERS = ["The purchase price is $12,000,000.", "The price is $12m per the signed SPA.", "The price could be $12m or $15m.",
           "Roughly 12 to 15 million, unclear."]
TIGHT = {"check": "regex", "pattern": r"price is \$12(,000,000|m)\b", "flags": "i"}
NASTY = ('<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a>'
         '<div hx-get="/evil" hx-trigger="load">y</div>')


def demo_task(team, world, criteria=WEAK):
    env_task = authoring_services.env_task_create(world=world, user=team.author, title="State the price",
                                                  prompt="Read the data room and state the purchase price.",
                                                  reference_answer="The purchase price is $12,000,000.")
    for text, points, config in criteria:
        rubric = env_task.rubric_versions.order_by("-number").first()
        kind = "check" if config.get("check") else "llm_judge"
        authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text=text, points=points,
                                         tag="pitfall" if points < 0 else "essential", grader_kind=kind, grader_config=config)
    return env_task


def graded_batch(env_task, user, endpoint, fake_llm, capture, answers=ANSWERS, judge=None):
    """A batch whose rollouts answer `answers` in order, graded in-process."""
    replies = iter(answers)
    fake_llm.responder = judge or (lambda request: Reply(content=next(replies)))
    with capture(execute=False):
        batch = rollout_services.rollout_batch_start(env_task=env_task, user=user, endpoint=endpoint, n=len(answers))
    for rollout in batch.rollouts.order_by("index"):
        if judge:
            fake_llm.script(Reply(content=next(replies)))
        with capture(execute=False):
            rollout_execute(rollout_id=rollout.pk)
    run_pending_grades()
    return batch


def run_pending_grades():
    for grade in Grade.objects.filter(status=GradeStatus.QUEUED).order_by("pk"):
        grade_execute(grade_id=grade.pk)


@pytest.fixture
def demo(team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    env_task = demo_task(team, world)
    batch = graded_batch(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks)
    return SimpleNamespace(task=env_task, batch=batch, rollouts=list(batch.rollouts.order_by("index")), rubric=batch.rubric_version)


@pytest.fixture
def author_client(client, team):
    client.force_login(team.author)
    return client


def tighten(demo, team):
    """Rubric v2: the fooled criterion made strict (the batch froze v1)."""
    criterion = demo.rubric.criteria.get(position=1)
    authoring_services.criterion_update(criterion=criterion, user=team.author, base_revision=demo.rubric.revision,
                                        text="States that the price is $12m",
                                        points=5, tag="essential", grader_kind="check", grader_config=TIGHT)
    return demo.task.rubric_versions.get(number=2)


def bar_counts(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<rect class="q-bar"[^>]*data-count="(\d+)"', html)]


# --- The Verifier panel -------------------------------------------------------------------------

def test_the_task_page_loads_the_panel_and_refreshes_it_when_criteria_change(author_client, demo):
    page = author_client.get(reverse("task-editor", args=[demo.task.pk])).content.decode()
    panel = re.search(r'<div id="task-verifier"[^>]*>', page).group(0)
    assert reverse("task-verifier", args=[demo.task.pk]) in panel and "criteria-changed from:body" in panel


def test_panel_shows_difficulty_curve_band_and_score_distribution(author_client, demo):
    response = author_client.get(reverse("task-verifier", args=[demo.task.pk]), **HX)
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<section class="card q-panel" id="verifier-panel">')
    difficulty = html.split('id="q-difficulty"', 1)[1].split('id="q-agreement"', 1)[0]
    assert difficulty.count('class="q-point"') == 3  # k = 1, 2, 4 for n = 4
    assert "too easy" in difficulty and "4 of 4 passed" in difficulty
    assert bar_counts(html) == [0] * 8 + [1, 3]  # 0.83 and three 1.0
    assert "every 2s" not in difficulty.split(">", 1)[0]  # nothing pending: no polling
    assert reverse("batch-quality", args=[demo.batch.pk]) in html


def test_panel_as_a_page_of_its_own_and_its_parts(author_client, demo):
    page = author_client.get(reverse("task-verifier", args=[demo.task.pk]))
    assert page.status_code == 200 and "<html" in page.content.decode() and 'id="verifier-panel"' in page.content.decode()
    part = author_client.get(reverse("task-verifier", args=[demo.task.pk]) + "?part=difficulty", **HX).content.decode()
    assert part.lstrip().startswith('<div id="q-difficulty"') and "q-agreement" not in part


def test_panel_polls_while_grades_are_pending(author_client, demo):
    Grade.objects.filter(rollout=demo.rollouts[0]).update(status=GradeStatus.QUEUED)
    part = author_client.get(reverse("task-verifier", args=[demo.task.pk]) + "?part=difficulty", **HX).content.decode()
    assert 'hx-trigger="every 2s, rubric-settings-changed from:body"' in part and "1 grade waiting" in part


def test_panel_without_a_batch_says_what_to_do(author_client, team, world):
    env_task = demo_task(team, world)
    html = author_client.get(reverse("task-verifier", args=[env_task.pk]), **HX).content.decode()
    assert 'id="q-no-batch"' in html and "q-bar" not in html


def test_agreement_sits_next_to_each_criterion_of_the_current_rubric(author_client, demo, team):
    mentions = demo.rubric.criteria.get(position=2)
    author_client.post(
        reverse("batch-expert-verdict", args=[demo.batch.pk]),
        {"rollout": demo.rollouts[0].pk, "criterion": mentions.pk, "verdict": "not_met"},
        **HX,
    )
    html = author_client.get(reverse("task-verifier", args=[demo.task.pk]) + "?part=agreement", **HX).content.decode()
    row = re.search(rf'<tr id="q-agreement-{mentions.pk}">(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[2:7] == ["4", "1", "1", "0", "0.67"]  # graded, marks, FP, FN, precision
    tighten(demo, team)  # the rewritten criterion has no numbers until regraded; the untouched one keeps its own
    html = author_client.get(reverse("task-verifier", args=[demo.task.pk]) + "?part=agreement", **HX).content.decode()
    assert "not graded yet (new or changed since version 1)" in html and ">0.67<" in html


def test_judge_prompt_is_shown_escaped_for_the_chosen_criterion(
    author_client, team, world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    env_task = demo_task(team, world, [(f"Says {NASTY}", 2, {"sees": ["answer", "trajectory"]}), *WEAK])
    graded_batch(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks, answers=["The price is $12m."],
                 judge=lambda request: Reply(structured={"explanation": "ok", "criteria_met": True}))
    criterion = env_task.rubric_versions.get().criteria.get(position=1)
    html = author_client.get(reverse("task-judge-prompt", args=[env_task.pk]) + f"?criterion={criterion.pk}", **HX).content.decode()
    assert html.lstrip().startswith('<div id="q-judge-prompt"') and "<details open>" in html
    assert "You grade one response against one rubric criterion" in html and "# The agent&#x27;s steps" in html
    assert "As the judge sees rollout 1" in html and 'id="q-prompt-check"' not in html
    assert_sanitized(html)
    check = env_task.rubric_versions.get().criteria.get(position=2)
    html = author_client.get(reverse("task-judge-prompt", args=[env_task.pk]) + f"?criterion={check.pk}", **HX).content.decode()
    assert 'id="q-prompt-check"' in html and "would be sent this" in html and "As the judge sees rollout 1" in html


def assert_sanitized(html: str) -> None:
    assert "&lt;script&gt;" in html
    for raw in ("<script>alert", "<img", 'href="javascript:', 'hx-get="/evil"', "onerror=\"alert"):
        assert raw not in html, raw


# --- Grading settings -----------------------------------------------------------------------------

def test_settings_of_a_frozen_rubric_start_a_new_version(author_client, demo):
    rubric = demo.rubric
    response = author_client.post(reverse("task-rubric-settings", args=[demo.task.pk]),
                                  {"pass_threshold": "0.9", "all_must_pass": "on", "judge_samples": "3", "revision": rubric.revision}, **HX)
    assert response.status_code == 200 and json.loads(response["HX-Trigger-After-Swap"]) == {"rubric-settings-changed": True}
    assert "Saved as rubric version 2" in response.content.decode()
    v1, v2 = demo.task.rubric_versions.order_by("number")
    assert (v1.pass_threshold, v1.all_must_pass, v1.judge_samples) == (0.7, False, 1)  # graded trials: never changes
    assert (v2.pass_threshold, v2.all_must_pass, v2.judge_samples) == (0.9, True, 3)
    assert list(v2.criteria.values_list("text", flat=True)) == list(v1.criteria.values_list("text", flat=True))
    rubric_part = author_client.get(reverse("task-editor", args=[demo.task.pk]) + "?part=rubric", **HX).content.decode()
    assert rubric_part.lstrip().startswith('<section id="rubric"') and "version 2" in rubric_part


@pytest.mark.parametrize(("data", "message"), [
    ({"pass_threshold": "1.5", "judge_samples": "1"}, "Pass threshold"),
    ({"pass_threshold": "0.5", "judge_samples": "10"}, "Judge samples"),
    ({"pass_threshold": "x", "judge_samples": "1"}, "Pass threshold"),
])
def test_invalid_settings_are_refused_and_change_nothing(author_client, demo, data, message):
    response = author_client.post(reverse("task-rubric-settings", args=[demo.task.pk]), {**data, "revision": demo.rubric.revision}, **HX)
    assert response.status_code == 422 and message in response.content.decode()
    assert demo.task.rubric_versions.count() == 1


def test_the_settings_service_validates_and_skips_no_op_saves(team, demo):
    rubric = demo.rubric
    same = authoring_services.rubric_settings_update(env_task=demo.task, user=team.author, base_revision=rubric.revision,
                                                     pass_threshold=0.7, all_must_pass=False, judge_samples=1)
    assert same.pk == rubric.pk and demo.task.rubric_versions.count() == 1
    for bad in ({"pass_threshold": -0.1}, {"pass_threshold": float("nan")}, {"judge_samples": 0}, {"all_must_pass": "yes"}):
        with pytest.raises(ApplicationError):
            authoring_services.rubric_settings_update(env_task=demo.task, user=team.author, base_revision=rubric.revision,
                                                      **{"pass_threshold": 0.5, "all_must_pass": False, "judge_samples": 3, **bad})
    with pytest.raises(ApplicationError, match="cannot edit"):
        authoring_services.rubric_settings_update(env_task=demo.task, user=team.reviewer, base_revision=rubric.revision, pass_threshold=0.5,
                                                  all_must_pass=False, judge_samples=3)
    fresh = authoring_services.rubric_settings_update(env_task=demo.task, user=team.author, base_revision=rubric.revision,
                                                      pass_threshold=0.5, all_must_pass=False, judge_samples=4)
    again = authoring_services.rubric_settings_update(env_task=demo.task, user=team.author, base_revision=fresh.revision,
                                                      pass_threshold=0.6, all_must_pass=False, judge_samples=5)
    assert fresh.number == again.number == 2 and again.revision == fresh.revision + 1  # an unfrozen version is edited in place


def test_a_reviewer_reads_the_panel_but_edits_nothing(client, team, demo):
    client.force_login(team.reviewer)
    html = client.get(reverse("task-verifier", args=[demo.task.pk]), **HX).content.decode()
    assert "Save grading settings" not in html and "Run the probes" not in html and "Pass threshold <strong>0.7</strong>" in html
    refused = client.post(
        reverse("task-rubric-settings", args=[demo.task.pk]),
        {"pass_threshold": "0.5", "judge_samples": "1", "revision": demo.rubric.revision},
        **HX,
    )
    assert refused.status_code == 403 and demo.task.rubric_versions.count() == 1


# --- The grader in the criterion forms ----------------------------------------------------------------

def test_the_check_kinds_the_editor_offers_are_the_graders(db):
    assert [kind for kind, _ in CHECK_KINDS] == list(KINDS)


def test_a_criterion_is_added_with_a_check_and_edited_to_a_judge(author_client, team, world):
    env_task = demo_task(team, world, [])
    rubric = env_task.rubric_versions.get()
    added = author_client.post(reverse("criterion-add", args=[env_task.pk]), {
        "text": "States the price", "points": 3, "tag": "essential", "revision": rubric.revision, "grader_kind": "check", "check": "regex",
        "check_pattern": r"\$12(m|,000,000)",
    }, **HX)
    assert added.status_code == 200 and added["HX-Trigger"] == "criteria-changed"
    criterion = Criterion.objects.get(rubric_version=rubric)
    assert (criterion.grader_kind, criterion.grader_config) == ("check", {"check": "regex", "pattern": r"\$12(m|,000,000)", "flags": "i"})
    assert "Check: regex" in added.content.decode()
    form = author_client.get(reverse("criterion-row", args=[criterion.pk]) + "?edit=1", **HX).content.decode()
    assert re.search(r'<input type="radio" name="grader_kind" value="check"[^>]*checked', form)
    assert r'value="\$12(m|,000,000)"' in form and re.search(r'<option value="regex" selected>', form)
    rubric.refresh_from_db()
    edited = author_client.post(reverse("criterion-row", args=[criterion.pk]), {
        "text": "States the price", "points": 3, "tag": "essential", "revision": rubric.revision, "grader_kind": "llm_judge",
        "judge_sees": ["answer", "files"],
    }, **HX)
    assert edited.status_code == 200
    criterion.refresh_from_db()
    assert (criterion.grader_kind, criterion.grader_config) == ("llm_judge", {"sees": ["answer", "files"]})
    rubric.refresh_from_db()  # a form without grader fields keeps the grader
    author_client.post(
        reverse("criterion-row", args=[criterion.pk]),
        {"text": "Renamed", "points": 3, "tag": "essential", "revision": rubric.revision},
        **HX,
    )
    criterion.refresh_from_db()
    assert (criterion.text, criterion.grader_config) == ("Renamed", {"sees": ["answer", "files"]})


@pytest.mark.parametrize(("fields", "message"), [
    ({"check": "regex", "check_pattern": ""}, "Pattern: This check needs it."),
    ({"check": "regex", "check_pattern": "("}, "Not a valid regular expression"),
    ({"check": "numeric", "check_value": "twelve"}, "compares with a number"),
    ({"check": "xlsx_cell", "check_path": "Model.xlsx", "check_value": "30"}, "Cell (e.g. B4): This check needs it."),
])
def test_an_incomplete_check_is_refused(author_client, team, world, fields, message):
    env_task = demo_task(team, world, [])
    rubric = env_task.rubric_versions.get()
    response = author_client.post(reverse("criterion-add", args=[env_task.pk]), {
        "text": "x", "points": 1, "tag": "important", "revision": rubric.revision, "grader_kind": "check", **fields}, **HX)
    assert response.status_code == 422 and message in response.content.decode()
    assert not Criterion.objects.filter(rubric_version=rubric).exists()


def test_numeric_and_overlay_checks_are_stored_as_the_graders_read_them(author_client, team, world):
    env_task = demo_task(team, world, [])
    rubric = env_task.rubric_versions.get()
    author_client.post(reverse("criterion-add", args=[env_task.pk]), {
        "text": "Price", "points": 1, "tag": "important", "revision": rubric.revision, "grader_kind": "check", "check": "numeric",
        "check_value": "12,000,000", "check_tolerance": "0.01", "check_relative": "on", "check_path": "ignored.md"}, **HX)
    rubric.refresh_from_db()
    author_client.post(reverse("criterion-add", args=[env_task.pk]), {
        "text": "Mail", "points": 1, "tag": "important", "revision": rubric.revision, "grader_kind": "check", "check": "email_sent",
        "check_to": "client@example.com", "check_subject": "memo"}, **HX)
    configs = list(Criterion.objects.filter(rubric_version=rubric).order_by("position").values_list("grader_config", flat=True))
    assert configs == [{"check": "numeric", "value": 12000000.0, "tolerance": 0.01, "relative": True},
                       {"check": "email_sent", "to": "client@example.com", "subject_contains": "memo"}]


# --- Probes ----------------------------------------------------------------------------------------------

def test_probes_run_poll_and_flag_the_fooled_criterion(author_client, demo, endpoint):
    url = reverse("task-probes", args=[demo.task.pk])
    started = author_client.post(url, {"judge_endpoint": endpoint.pk}, **HX)
    html = started.content.decode()
    assert started.status_code == 200 and html.lstrip().startswith('<div id="q-probes"') and 'hx-trigger="every 2s"' in html
    run = ProbeRun.objects.get(env_task=demo.task)
    # Built from the task: a hedge on $12,000,000, a near miss, the bare conclusion, the rubric's terms, a claimed review,
    # the prompt, an empty answer, a refusal, and the reference answer as the control.
    assert run.answers.count() == 9 and run.rubric_version == demo.rubric
    assert '<progress value="0" max="9"></progress>' in html and "0 of 9 probes graded" in html  # the progress while they are graded
    run_pending_grades()
    html = author_client.get(url, **HX).content.decode()
    assert "every 2s" not in html and "1 flagged" in html and 'id="q-probe-status">1 probe flagged<' in html
    hedging = run.answers.get(kind="hedging")
    row = re.search(rf'<tr id="q-probe-{hedging.pk}" class="q-flagged">(.*?)</tr>', html, re.S).group(1)
    fooled = demo.rubric.criteria.get(position=1)
    assert (
        "States the purchase price of $12m" in row and f'href="{reverse("task-editor", args=[demo.task.pk])}#criterion-{fooled.pk}"' in row
    )
    # Under it, the fix for each fooled criterion (both are checks: change the check) and a pitfall worth what the hedge scored.
    fix = re.search(rf'<tr class="q-fix-row" id="q-probe-{hedging.pk}-fix">(.*?)</tr>', html, re.S).group(1)
    assert "It is a deterministic check: make it require" in fix and "Use this wording" not in fix
    assert "Hedges: gives several candidate values" in fix and "<strong>-6</strong> points" in fix
    assert f'action="{reverse("criterion-add", args=[demo.task.pk])}"' in fix and 'name="tag" value="pitfall"' in fix
    refusal = run.answers.get(kind="refusal")
    assert f'<tr id="q-probe-{refusal.pk}" class="">' in html
    near_miss = run.answers.get(kind="near_miss")  # $13,200,000: the "12" check is not fooled by it
    assert near_miss.detail == {"fact": "$12,000,000", "wrong": "$13,200,000", "fact_kind": "amount"}
    assert f'<tr id="q-probe-{near_miss.pk}" class="">' in html


def test_on_the_task_page_a_fooled_criterion_opens_for_editing_in_place(author_client, demo, endpoint):
    author_client.post(reverse("task-probes", args=[demo.task.pk]), {"judge_endpoint": endpoint.pk}, **HX)
    run_pending_grades()
    task_url = "http://testserver" + reverse("task-editor", args=[demo.task.pk])
    html = author_client.get(reverse("task-probes", args=[demo.task.pk]), HTTP_HX_CURRENT_URL=task_url, **HX).content.decode()
    fooled = demo.rubric.criteria.get(position=1)
    assert f'hx-get="{reverse("criterion-row", args=[fooled.pk])}?edit=1" hx-target="#criterion-{fooled.pk}"' in html


def test_the_cheat_is_written_on_the_grading_queue_after_the_request_and_then_graded(author_client, demo, endpoint, fake_llm, eager,
                                                                                     django_capture_on_commit_callbacks):
    url = reverse("task-probes", args=[demo.task.pk])
    fake_llm.reset()
    fake_llm.responder = lambda request: Reply(structured={"answers": ["The price is 12, as the rubric asks."]})
    with django_capture_on_commit_callbacks(execute=True) as sent:
        response = author_client.post(url, {"judge_endpoint": endpoint.pk, "cheat_endpoint": endpoint.pk}, **HX)
        asked_before_the_answer = len(fake_llm.requests)  # (the commit's callbacks, the job's sending, run after this block)
    html = response.content.decode()
    assert response.status_code == 200 and asked_before_the_answer == 0
    assert "Writing the cheat answers with the model…" in html and 'hx-trigger="every 2s"' in html and "Model-written" not in html
    assert "0 of 5 kinds of cheat written" in html
    assert any(getattr(c, "__qualname__", "").startswith("probe_run_start") for c in sent)
    # The job ran (eagerly, once committed): one call per kind of cheat, each cheat queued for grading like the other probes.
    run = ProbeRun.objects.get(env_task=demo.task)
    assert (run.status, len(fake_llm.requests), run.answers.filter(kind="model_cheat").count()) == ("ready", 5, 5)
    polled = author_client.get(url, **HX).content.decode()
    assert "Writing the cheat answers" not in polled and "Model-written hedge 1" in polled and "Model-written near miss 1" in polled
    run_pending_grades()
    done = author_client.get(url, **HX).content.decode()
    assert "every 2s" not in done and "6 flagged" in done  # each cheat mentions 12 and the price: it fools both criteria (and the hedge)
    cheat = run.answers.filter(kind="model_cheat").first()
    assert f'<tr id="q-probe-{cheat.pk}" class="q-flagged">' in done
    # A second message for the same run is a no-op: no model call, no second cheat.
    from verification.tasks import probe_run_write_cheats

    probe_run_write_cheats.delay(run.pk)
    assert (len(fake_llm.requests), run.answers.count()) == (5, 14)


def test_a_failed_cheat_shows_its_reason_and_stops_polling(author_client, demo, endpoint, fake_llm, django_capture_on_commit_callbacks):
    from verification.services import probe_run_write_cheats

    url = reverse("task-probes", args=[demo.task.pk])
    fake_llm.responder = lambda request: Reply(status=400, content="no such model")
    author_client.post(url, {"judge_endpoint": endpoint.pk, "cheat_endpoint": endpoint.pk}, **HX)
    probe_run_write_cheats(probe_run_id=ProbeRun.objects.get(env_task=demo.task).pk)
    run_pending_grades()
    html = author_client.get(url, **HX).content.decode()
    assert "every 2s" not in html and "Writing the cheat answers" not in html
    assert re.search(r'id="q-probe-cheats-failed">No model-written cheat in this run: The cheat-writing model failed: ', html)


def test_probe_answers_written_by_a_model_are_escaped(author_client, demo, endpoint, fake_llm):
    from verification.services import probe_run_write_cheats

    fake_llm.responder = lambda request: Reply(structured={"answers": [NASTY + " price 12"]})
    response = author_client.post(
        reverse("task-probes", args=[demo.task.pk]), {"judge_endpoint": endpoint.pk, "cheat_endpoint": endpoint.pk}, **HX
    )
    probe_run_write_cheats(probe_run_id=ProbeRun.objects.get(env_task=demo.task).pk)
    run_pending_grades()
    html = author_client.get(reverse("task-probes", args=[demo.task.pk]), **HX).content.decode()
    assert response.status_code == 200 and "Model-written hedge 1" in html
    assert_sanitized(html)


def test_probes_without_a_judge_model_are_refused(author_client, demo):
    response = author_client.post(reverse("task-probes", args=[demo.task.pk]), {}, **HX)
    assert response.status_code == 422 and "Judge model" in response.content.decode() and not ProbeRun.objects.exists()


# --- The batch quality page ---------------------------------------------------------------------------------

def test_the_grades_page_lists_every_grade_with_its_verdicts(author_client, demo):
    html = author_client.get(reverse("batch-quality", args=[demo.batch.pk])).content.decode()
    assert "Grades under rubric version 1" in html and html.count('class="q-rollout"') == 4
    assert re.findall(r"<strong>(\d\.\d\d)</strong> <span class=\"small muted\">", html) == ["1.00", "1.00", "1.00", "0.83"]
    assert "The answer contains &#x27;12&#x27;." in html  # the check's rationale
    assert 'id="q-up-to-date"' in html and "q-regrade" not in html
    for part, starts in (("grading", '<section class="card" id="q-grading"'), ("ranking", '<section class="card" id="q-ranking"'),
                         ("agreement", '<section class="card" id="q-agreement"')):
        fragment = author_client.get(reverse("batch-quality", args=[demo.batch.pk]) + f"?part={part}", **HX).content.decode()
        assert fragment.lstrip().startswith(starts), part


def test_judge_rationales_are_escaped_and_failed_grades_show_their_error(
    author_client, team, world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    env_task = demo_task(team, world, [("Names the buyer", 2, {"sees": ["answer"]}), *WEAK])
    judgements = iter([Reply(structured={"explanation": NASTY, "criteria_met": True}), *[Reply(content="not json")] * 8])
    batch = graded_batch(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks,
                         answers=["Acme buys for $12m.", "Acme."], judge=lambda request: next(judgements))
    grades = list(Grade.objects.filter(rollout__batch=batch).order_by("rollout__index"))
    assert [g.status for g in grades] == [GradeStatus.GRADED, GradeStatus.FAILED]
    html = author_client.get(reverse("batch-quality", args=[batch.pk])).content.decode()
    assert_sanitized(html)
    failed = html.split('id="q-rollout-2"', 1)[1]
    assert "Grading failed" in failed and "not valid JSON" in failed and "1 grading failed" in html


def test_expert_verdict_toggle_saves_and_refreshes_agreement(client, team, demo):
    client.force_login(team.reviewer)  # reviewers judge trajectories too
    rollout, criterion = demo.rollouts[2], demo.rubric.criteria.get(position=1)
    url = reverse("batch-expert-verdict", args=[demo.batch.pk])
    response = client.post(url, {"rollout": rollout.pk, "criterion": criterion.pk, "verdict": "not_met"}, **HX)
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith(
        f'<tr id="q-ev-{rollout.pk}-{criterion.pk}" class="q-verdict q-disagree">'
    )
    assert re.search(r'value="not_met" class="icon q-on" aria-pressed="true"', html) and "You disagree with the judge" in html
    assert json.loads(response["HX-Trigger-After-Swap"]) == {"expert-verdicts-changed": True}
    assert ExpertVerdict.objects.get(rollout=rollout, criterion=criterion, expert=team.reviewer).met is False
    agreement = client.get(reverse("batch-quality", args=[demo.batch.pk]) + "?part=agreement", **HX).content.decode()
    row = re.search(rf'<tr id="q-agreement-{criterion.pk}">(.*?)</tr>', agreement, re.S).group(1)
    assert re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[1:3] == ["1", "1"]  # marks, FP
    client.post(url, {"rollout": rollout.pk, "criterion": criterion.pk, "verdict": "judge"}, **HX)
    assert not ExpertVerdict.objects.exists()
    plain = client.post(url, {"rollout": rollout.pk, "criterion": criterion.pk, "verdict": "met"})
    assert plain.status_code == 302 and plain["Location"].endswith("#q-rollout-3")


def test_an_expert_verdict_on_another_tasks_criterion_is_refused(author_client, demo, team, world):
    other = demo_task(team, world, WEAK)
    response = author_client.post(reverse("batch-expert-verdict", args=[demo.batch.pk]),
                                  {"rollout": demo.rollouts[0].pk, "criterion": other.rubric_versions.get().criteria.first().pk,
                                   "verdict": "met"}, **HX)
    assert response.status_code == 404 and not ExpertVerdict.objects.exists()


def test_ranking_with_buttons_and_positions_gives_tau_rho_and_the_scatter(author_client, team, demo):
    url = reverse("batch-ranking", args=[demo.batch.pk])
    ids = [r.pk for r in demo.rollouts]
    response = author_client.post(url, {"order": ids, "move": f"{ids[3]}:up"}, **HX)  # D above C
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<section class="card" id="q-ranking"')
    assert Ranking.objects.get(expert=team.author).order == [ids[0], ids[1], ids[3], ids[2]]
    assert html.count('class="q-point q-dot"') == 4 and 'id="q-tau"' in html and 'id="q-rho"' in html
    plain = author_client.post(url, {"order": ids, **{f"position_{pk}": str(4 - i) for i, pk in enumerate(ids)}})
    assert plain.status_code == 302 and Ranking.objects.get(expert=team.author).order == ids[::-1]
    page = author_client.get(reverse("batch-quality", args=[demo.batch.pk])).content.decode()
    assert 'id="q-low-agreement"' in page and "Low agreement" in page and re.search(r'id="q-tau">-0\.71<', page)


def test_a_ranking_that_leaves_a_trajectory_out_is_refused(author_client, demo):
    response = author_client.post(reverse("batch-ranking", args=[demo.batch.pk]), {"order": [demo.rollouts[0].pk]}, **HX)
    assert response.status_code == 422 and "exactly once" in response.content.decode() and not Ranking.objects.exists()


def test_regrade_polls_then_shows_what_changed(author_client, team, demo, django_capture_on_commit_callbacks):
    ids = [r.pk for r in demo.rollouts]
    author_client.post(reverse("batch-ranking", args=[demo.batch.pk]), {"order": ids}, **HX)
    v2 = tighten(demo, team)
    page = author_client.get(reverse("batch-quality", args=[demo.batch.pk])).content.decode()
    assert 'id="q-regrade-box"' in page and "now <strong>version 2</strong>" in page
    with django_capture_on_commit_callbacks(execute=False):
        response = author_client.post(reverse("batch-regrade", args=[demo.batch.pk]), **HX)
    html = response.content.decode()
    assert response.status_code == 200 and response["HX-Push-Url"] == reverse("batch-quality", args=[demo.batch.pk])
    assert json.loads(response["HX-Trigger-After-Swap"]) == {"grades-changed": True}
    assert "Grades under rubric version 2" in html and 'hx-trigger="every 2s"' in html and "poll=1" in html and "4 grading" in html
    assert Grade.objects.filter(rubric_version=v2, status=GradeStatus.QUEUED).count() == 4
    run_pending_grades()
    polled = author_client.get(reverse("batch-quality", args=[demo.batch.pk]) + "?part=grading&rubric=2&vs=1&poll=1", **HX)
    html = polled.content.decode()
    assert "every 2s" not in html and json.loads(polled["HX-Trigger-After-Swap"]) == {"grades-settled": True}
    changes = html.split('id="q-changes"', 1)[1].split("</table>", 1)[0]
    assert "rubric version 1 → 2" in changes and "0.96 → 0.54" in changes and "4 → 2" in changes
    assert re.findall(r'class="q-delta q-down">(-0\.\d\d)<', changes) == ["-0.83", "-0.83"]
    ranking = author_client.get(reverse("batch-quality", args=[demo.batch.pk]) + "?part=ranking&rubric=2", **HX).content.decode()
    assert re.search(r'id="q-tau">0\.91<', ranking)
    panel = author_client.get(reverse("task-verifier", args=[demo.task.pk]) + "?part=difficulty", **HX).content.decode()
    assert "learnable" in panel and "graded with rubric <strong>version 2</strong>" in panel and bar_counts(panel) == [1, 1] + [0] * 7 + [2]


def test_plain_regrade_redirects_and_a_reviewer_may_not_regrade(client, team, demo, django_capture_on_commit_callbacks):
    tighten(demo, team)
    client.force_login(team.reviewer)
    refused = client.post(reverse("batch-regrade", args=[demo.batch.pk]), **HX)
    assert refused.status_code == 403 and "cannot edit content" in refused.content.decode()
    assert not Grade.objects.filter(rubric_version__number=2).exists()
    client.force_login(team.author)
    with django_capture_on_commit_callbacks(execute=False):
        plain = client.post(reverse("batch-regrade", args=[demo.batch.pk]))
    assert plain.status_code == 302 and Grade.objects.filter(rubric_version__number=2).count() == 4


def test_an_older_version_can_be_shown_and_compared(author_client, team, demo, django_capture_on_commit_callbacks):
    tighten(demo, team)
    with django_capture_on_commit_callbacks(execute=False):
        author_client.post(reverse("batch-regrade", args=[demo.batch.pk]), **HX)
    run_pending_grades()
    html = author_client.get(reverse("batch-quality", args=[demo.batch.pk]) + "?rubric=1").content.decode()
    assert "Grades under rubric version 1" in html and 'id="q-changes"' not in html and 'id="q-regrade-box"' not in html
    both = author_client.get(reverse("batch-quality", args=[demo.batch.pk]) + "?rubric=2&vs=1").content.decode()
    assert "What changed: rubric version 1 → 2" in both
    assert RubricVersion.objects.filter(env_task=demo.task).count() == 2


# --- The plots -----------------------------------------------------------------------------------------------

def test_plots_have_one_mark_per_value():
    curve = plots.pass_at_k_plot([(1, 0.25), (2, 0.4), (4, 0.6), (8, 0.8), (16, 1.0)])
    assert len(curve["points"]) == 5 and curve["path"].count("L") == 4
    xs = [p.x for p in curve["points"]]
    assert xs == sorted(xs) and xs[0] == plots.LEFT and xs[-1] == plots.WIDTH - plots.RIGHT  # log2 axis, ends at the frame
    assert [p.y for p in curve["points"]] == sorted([p.y for p in curve["points"]], reverse=True)  # higher pass@k is higher up
    single = plots.pass_at_k_plot([(1, 0.5)])
    assert len(single["points"]) == 1 and single["path"].startswith("M")
    histogram = plots.histogram_plot([0.0, 0.05, 0.5, 0.99, 1.0, 1.0], threshold=0.7)
    assert len(histogram["bars"]) == 10 and histogram["counts"] == [2, 0, 0, 0, 0, 1, 0, 0, 0, 3]
    assert histogram["bars"][9].height == plots.PLOT_H and histogram["bars"][1].height == 0
    assert plots.histogram_plot([])["counts"] == [0] * 10
    scatter = plots.scatter_plot([(7, 1.0, 1), (8, 0.5, 2), (9, 0.0, 3)], {7: "Rollout 1"})
    assert len(scatter["points"]) == 3 and scatter["points"][0].y < scatter["points"][2].y and "Rollout 1" in scatter["points"][0].label
    assert [t.label for t in scatter["y_ticks"]] == ["1st", "3rd"] and plots.ordinal(12) == "12th" and plots.ordinal(22) == "22nd"
