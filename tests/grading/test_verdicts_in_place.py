"""Issue 15, "Verdicts where the author reads": the batch table shows each rollout's score
and pass; a regrade's "what changed" names the criterion verdicts that flipped, with the
criterion's old and new text; expert calls carry over to a new rubric version for criteria
whose text and points did not change (changed ones start empty and say so); two experts'
agreement (Cohen's kappa, F1 of one against the other) shows as the ceiling beside the
judge's F1. Everything is graded by deterministic checks: no judge model is needed."""

import html
import re

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from authoring import services as authoring_services
from rollouts import services as rollout_services
from rollouts.agent import rollout_execute
from rollouts.grading.services import grade_execute
from rollouts.models import ExpertVerdict, Grade, GradeStatus
from tests.fake_llm import Reply
from verification.services import expert_verdict_set, ranking_set

HX = {"HTTP_HX_REQUEST": "true"}
PRICE = ("States $12m", 5, {"check": "contains", "value": "$12m"})
SAYS_PRICE = ("Says 'price'", 1, {"check": "contains", "value": "price"})


def text(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))


def squeeze(fragment: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment))).strip()


def checked_task(team, world, criteria):
    env_task = authoring_services.env_task_create(world=world, user=team.author, title="Price", prompt="State the purchase price.",
                                                  reference_answer="The purchase price is $12m.")
    rubric = env_task.rubric_versions.get()
    for criterion_text, points, config in criteria:
        authoring_services.criterion_add(env_task=env_task, user=team.author, base_revision=rubric.revision, text=criterion_text,
                                         points=points, tag="essential", grader_kind="check", grader_config=config)
        rubric.refresh_from_db()
    return env_task


def run_and_grade(env_task, user, endpoint, fake_llm, capture, answers):
    replies = iter(answers)
    fake_llm.responder = lambda request: Reply(content=next(replies))
    with capture(execute=False):
        batch = rollout_services.rollout_batch_start(env_task=env_task, user=user, endpoint=endpoint, n=len(answers), mode="no_tools")
    for rollout in batch.rollouts.order_by("index"):
        with capture(execute=False):
            rollout_execute(rollout_id=rollout.pk)
    grade_all(batch)
    return batch


def grade_all(batch):
    for grade in Grade.objects.filter(rollout__batch=batch, status=GradeStatus.QUEUED):
        grade_execute(grade_id=grade.pk)


def regrade_with_edited_second_criterion(client, env_task, batch, capture):
    """Version 2: the second criterion's text (and check) edited, the first left alone."""
    rubric = env_task.rubric_versions.get()
    second = rubric.criteria.order_by("position")[1]
    authoring_services.criterion_update(criterion=second, user=batch.created_by, base_revision=rubric.revision, text="Says 'purchase'",
                                        points=1, tag="essential", grader_kind="check",
                                        grader_config={"check": "contains", "value": "purchase"})
    with capture(execute=False):
        response = client.post(reverse("batch-regrade", args=[batch.pk]))
    assert response.status_code == 302
    grade_all(batch)
    return env_task.rubric_versions.get(number=2)


@pytest.fixture
def api_client_for(db):
    def make(user) -> APIClient:
        token, _ = Token.objects.get_or_create(user=user)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


@pytest.fixture
def author_client(client, team):
    client.force_login(team.author)
    return client


# --- The batch table --------------------------------------------------------------------------

def test_the_batch_table_shows_each_rollouts_score_and_pass(
    author_client, team, world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    env_task = checked_task(team, world, [PRICE, SAYS_PRICE])
    batch = run_and_grade(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks,
                          ["The price is $12m.", "No idea.", "It is $12m."])
    page = author_client.get(reverse("batch-detail", args=[batch.pk])).content.decode()
    assert re.search(r"<th>Score <span[^>]*>rubric v1</span></th><th>Passed</th>", page)
    rows = {n: squeeze(re.search(rf'<tr id="rollout-row-{n}".*?</tr>', page, re.S).group(0)) for n in (1, 2, 3)}
    assert " s 1.00 ✓ pass " in rows[1]  # (after the status and how long it took)
    assert " s 0.00 ✗ fail " in rows[2]
    assert " s 0.83 ✓ pass " in rows[3]  # 5 of 6 points: the answer never says "price"
    # The polled fragment shows them too.
    live = author_client.get(reverse("batch-detail", args=[batch.pk]), **HX).content.decode()
    assert "✗ fail" in live and "1.00" in live


def test_the_batch_table_says_when_grading_is_pending_or_failed(
    author_client, team, world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    env_task = checked_task(team, world, [PRICE])
    replies = iter(["The price is $12m.", "No idea."])
    fake_llm.responder = lambda request: Reply(content=next(replies))
    with django_capture_on_commit_callbacks(execute=False):
        batch = rollout_services.rollout_batch_start(env_task=env_task, user=team.author, endpoint=endpoint, n=2, mode="no_tools")
        for rollout in batch.rollouts.order_by("index"):
            rollout_execute(rollout_id=rollout.pk)
    _first, second = Grade.objects.filter(rollout__batch=batch).order_by("rollout__index")
    Grade.objects.filter(pk=second.pk).update(status=GradeStatus.FAILED, error="criterion 1: broken check")
    page = author_client.get(reverse("batch-detail", args=[batch.pk])).content.decode()
    assert "grading…" in squeeze(re.search(r'<tr id="rollout-row-1".*?</tr>', page, re.S).group(0))
    assert "grading failed" in squeeze(re.search(r'<tr id="rollout-row-2".*?</tr>', page, re.S).group(0))


# --- What changed in a regrade ----------------------------------------------------------------

def test_a_regrade_says_which_verdicts_flipped_with_the_criterions_old_and_new_text(author_client, team, world, endpoint, fake_llm,
                                                                                  django_capture_on_commit_callbacks):
    env_task = checked_task(team, world, [PRICE, SAYS_PRICE])
    batch = run_and_grade(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks,
                          ["The price is $12m.", "No idea.", "The purchase price is $12m."])
    regrade_with_edited_second_criterion(author_client, env_task, batch, django_capture_on_commit_callbacks)
    page = author_client.get(reverse("batch-quality", args=[batch.pk])).content.decode()
    changes = page.split('id="q-changes"', 1)[1].split('id="q-grades"', 1)[0]
    # The criteria that changed, old text beside new.
    criteria = squeeze(re.search(r'<table class="q-table" id="q-criteria-changes">.*?</table>', changes, re.S).group(0))
    assert "changed 2 → 2 Says 'price' (1 pts) Says 'purchase' (1 pts)" in criteria
    assert "States $12m" not in criteria  # unchanged: not listed
    # The flips: rollout 1 said "price" but not "purchase"; rollout 3 says both; rollout 2 neither.
    flips = re.findall(r'<tr class="q-flip">(.*?)</tr>', changes, re.S)
    assert [squeeze(f) for f in flips] == ["Rollout 1 2. Says 'purchase' was: Says 'price' met not met"]
    assert "Rollout 1" in squeeze(re.search(r'<table class="q-table" id="q-changes-table">.*?</table>', changes, re.S).group(0))


def test_a_regrade_where_no_verdict_flipped_says_so(author_client, team, world, endpoint, fake_llm, django_capture_on_commit_callbacks):
    env_task = checked_task(team, world, [PRICE, SAYS_PRICE])
    batch = run_and_grade(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks, ["No idea.", "Nothing."])
    regrade_with_edited_second_criterion(author_client, env_task, batch, django_capture_on_commit_callbacks)
    body = text(author_client.get(reverse("batch-quality", args=[batch.pk])))
    assert "No criterion verdict flipped: only the criteria that changed moved the scores." in body


# --- Expert calls carry over to a new rubric version ---------------------------------------------

def test_expert_calls_carry_over_for_unchanged_criteria_and_changed_ones_start_empty(author_client, api_client_for, team, world, endpoint,
                                                                                     fake_llm, django_capture_on_commit_callbacks):
    env_task = checked_task(team, world, [PRICE, SAYS_PRICE])
    batch = run_and_grade(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks,
                          ["The price is $12m.", "No idea.", "It is $12m."])
    v1 = batch.rubric_version
    price_v1, says_v1 = v1.criteria.order_by("position")
    first, second, third = batch.rollouts.order_by("index")
    expert_verdict_set(rollout=second, criterion=price_v1, user=team.author, met=True)  # the judge said not met
    expert_verdict_set(rollout=first, criterion=says_v1, user=team.author, met=False)  # the judge said met
    ranking_set(batch=batch, user=team.author, order=[third.pk, first.pk, second.pk])

    v2 = regrade_with_edited_second_criterion(author_client, env_task, batch, django_capture_on_commit_callbacks)
    price_v2, says_v2 = v2.criteria.order_by("position")
    assert not ExpertVerdict.objects.filter(criterion__rubric_version=v2).exists()  # looked up, not copied

    page = author_client.get(reverse("batch-quality", args=[batch.pk])).content.decode()
    assert "Grades under rubric version 2" in page
    carried = squeeze(re.search(rf'<tr id="q-ev-{second.pk}-{price_v2.pk}".*?</tr>', page, re.S).group(0))
    assert "Your call on version 1, carried over: the criterion's text and points did not change." in carried
    assert 'aria-pressed="true" aria-label="Rollout 2: criterion met"' in page
    fresh = squeeze(re.search(rf'<tr id="q-ev-{first.pk}-{says_v2.pk}".*?</tr>', page, re.S).group(0))
    assert "New or changed since version 1: no call of yours carries over." in fresh and "carried over" not in fresh

    # The judge-vs-expert table counts the carried call, and says the changed criterion starts empty.
    agreement = page.split('id="q-agreement"', 1)[1]
    price_row = squeeze(re.search(rf'<tr id="q-agreement-{price_v2.pk}">.*?</tr>', agreement, re.S).group(0))
    says_row = squeeze(re.search(rf'<tr id="q-agreement-{says_v2.pk}">.*?</tr>', agreement, re.S).group(0))
    assert price_row.startswith("States $12m 1 ")  # one mark: the carried one
    assert "new or changed since version 1: expert calls start empty" in says_row and "no expert marks yet" in says_row

    # The ranking belongs to the batch: it is still there, now against version 2's scores.
    ranking = page.split('id="q-ranking"', 1)[1].split('id="q-agreement"', 1)[0]
    assert "Saved." in ranking and "over 3 graded trajectories, rubric version 2" in squeeze(ranking)

    # The API says where each call comes from.
    api = api_client_for(team.author)
    grades = api.get(f"/api/batches/{batch.pk}/grades/").json()["grades"]
    cells = {(g["number"], v["number"]): v for g in grades for v in g["verdicts"]}
    assert (cells[(2, 1)]["expert_met"], cells[(2, 1)]["expert_carried_from"], cells[(2, 1)]["changed_since"]) == (True, 1, None)
    assert (cells[(1, 2)]["expert_met"], cells[(1, 2)]["expert_carried_from"], cells[(1, 2)]["changed_since"]) == (None, None, 1)
    rows = {row["criterion"]: row for row in api.get(f"/api/batches/{batch.pk}/agreement/").json()}
    assert (rows[price_v2.pk]["expert_marks"], rows[price_v2.pk]["fn"], rows[says_v2.pk]["changed_since"]) == (1, 1, 1)

    # Version 1 keeps what the expert said of it.
    old = author_client.get(reverse("batch-quality", args=[batch.pk]) + "?rubric=1").content.decode()
    assert "carried over" not in old and f'id="q-ev-{first.pk}-{says_v1.pk}"' in old


def test_agreeing_with_the_judge_on_a_carried_call_sticks(
    author_client, team, world, endpoint, fake_llm, django_capture_on_commit_callbacks
):
    env_task = checked_task(team, world, [PRICE, SAYS_PRICE])
    batch = run_and_grade(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks, ["The price is $12m.", "No idea."])
    price_v1 = batch.rubric_version.criteria.order_by("position").first()
    second = batch.rollouts.get(index=1)
    expert_verdict_set(rollout=second, criterion=price_v1, user=team.author, met=True)
    v2 = regrade_with_edited_second_criterion(author_client, env_task, batch, django_capture_on_commit_callbacks)
    price_v2 = v2.criteria.order_by("position").first()
    cell = author_client.post(reverse("batch-expert-verdict", args=[batch.pk]),
                              {"rollout": second.pk, "criterion": price_v2.pk, "verdict": "judge", "rubric": 2}, **HX).content.decode()
    assert 'aria-pressed="true" aria-label="Rollout 2: criterion not met"' in cell  # the judge's call, now the expert's own
    page = author_client.get(reverse("batch-quality", args=[batch.pk])).content.decode()
    row = squeeze(re.search(rf'<tr id="q-ev-{second.pk}-{price_v2.pk}".*?</tr>', page, re.S).group(0))
    assert "carried over" not in row and "You disagree with the judge" not in row
    assert ExpertVerdict.objects.get(criterion=price_v2).met is False
    assert ExpertVerdict.objects.get(criterion=price_v1).met is True  # what they said of version 1 is kept


# --- Two experts: the ceiling beside the judge's F1 ----------------------------------------------

def test_two_experts_agreement_shows_as_the_ceiling_beside_the_judges_f1(author_client, api_client_for, team, world, endpoint, fake_llm,
                                                                         django_capture_on_commit_callbacks):
    env_task = checked_task(team, world, [PRICE])
    batch = run_and_grade(env_task, team.author, endpoint, fake_llm, django_capture_on_commit_callbacks,
                          ["The price is $12m.", "It is $12m.", "The price is $15m.", "No idea."])  # the check: met, met, not, not
    criterion = batch.rubric_version.criteria.get()
    rollouts = list(batch.rollouts.order_by("index"))

    body = text(author_client.get(reverse("batch-quality", args=[batch.pk])))
    assert "Expert vs expert: no verdict marked by two experts yet." in body

    for rollout, a, b in zip(rollouts, [True, True, False, False], [True, False, False, False], strict=True):
        expert_verdict_set(rollout=rollout, criterion=criterion, user=team.author, met=a)
        expert_verdict_set(rollout=rollout, criterion=criterion, user=team.reviewer, met=b)
    # kappa: observed 3/4, expected 1/2 · 1/4 + 1/2 · 3/4 = 1/2 → 0.50; F1 of one against the other: 2·1 / (2·1 + 1) = 0.67;
    # the judge (met, met, not, not) against them on the same verdicts: F1 1.00 and 0.67, mean 0.83.
    page = author_client.get(reverse("batch-quality", args=[batch.pk]) + "?part=agreement", **HX).content.decode()
    ceiling = (
        squeeze(re.search(r'<p class="q-stats" id="q-expert-ceiling">.*?</p>', page, re.S).group(0)).replace(" :", ":").replace(" .", ".")
    )
    assert ceiling == ("Where two experts marked the same verdicts (4 shared calls), they agree with Cohen's κ 0.50 and F1 0.67: "
                       "the ceiling to read the judge's F1 against. The judge's F1 on the same verdicts: 0.83.")
    row = squeeze(re.search(rf'<tr id="q-agreement-{criterion.pk}">.*?</tr>', page, re.S).group(0))
    assert "experts: κ 0.50 · F1 0.67 over 4 shared; judge F1 there 0.83" in row

    verifier = author_client.get(reverse("task-verifier", args=[env_task.pk]) + "?part=agreement", **HX).content.decode()
    assert "experts: κ 0.50 · F1 0.67 over 4 shared; judge F1 there 0.83" in squeeze(verifier)  # the task's Verifier panel too

    experts = api_client_for(team.author).get(f"/api/batches/{batch.pk}/agreement/").json()[0]["experts"]
    assert experts == {"pairs": 1, "shared": 4, "kappa": pytest.approx(0.5), "f1": pytest.approx(2 / 3), "judge_f1": pytest.approx(5 / 6)}
