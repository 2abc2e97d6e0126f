"""The reviewer dashboard: agreement (Cohen's kappa, checked against scikit-learn), the
queue's figures, the page, its scope and query count, and the API.

The scenario is built through the services (submission_create / submission_claim_next /
review_decide), as users make it. The query-count test builds its 10 and 200 submissions
with direct ORM rows (bulk_create): through the services each costs a world snapshot and a
dozen writes, and only the number of queries the page makes matters there."""

import math
import warnings
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score

from accounts.models import Role
from reviews import services
from reviews.models import ChecklistAnswer, ChecklistItem, Decision, Review, ReviewPolicy, Submission, SubmissionStatus
from reviews.selectors import checklist_items
from reviews.selectors.stats import Agreement, review_stats_scope
from reviews.services import ChecklistMark
from tests import factories

A, R = Decision.APPROVE, Decision.REQUEST_CHANGES

# One row per submission: who reviews first and second, their decisions, and their answers to
# the five default checklist items (1 = pass). Item 0 is passed by everyone (kappa undefined).
SCENARIO = [
    ("first", "second", A, A, [1, 1, 1, 1, 1], [1, 1, 1, 1, 1]),
    ("first", "second", A, R, [1, 1, 1, 1, 1], [1, 0, 1, 1, 0]),
    ("second", "first", R, R, [1, 0, 0, 1, 1], [1, 0, 1, 0, 1]),
    ("first", "second", R, A, [1, 1, 0, 1, 1], [1, 1, 1, 1, 1]),
    ("first", "second", A, A, [1, 1, 1, 0, 1], [1, 1, 1, 1, 1]),
    ("second", "first", R, R, [1, 0, 0, 0, 0], [1, 0, 0, 1, 0]),
    ("first", "second", A, A, [1, 1, 1, 1, 1], [1, 1, 0, 1, 1]),
    ("first", "admin", A, R, [1, 1, 1, 1, 1], [1, 1, 0, 0, 1]),
    ("admin", "first", A, A, [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]),
]


def _kappa(first: list, second: list) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns, then answers NaN, when every answer is the same
        return float(cohen_kappa_score(first, second, labels=[0, 1]))


@pytest.fixture
def reviewed(team, world):
    """Nine submissions, each decided by two reviewers (the project asks for two approvals)."""
    ReviewPolicy.objects.create(project=team.project, approvals_required=2)
    people = {"first": team.reviewer, "second": factories.member(team.project, Role.REVIEWER, "second_reviewer"),
              "admin": team.admin}
    for i, (one, two, decision_one, decision_two, marks_one, marks_two) in enumerate(SCENARIO):
        env_task = factories.env_task(world, team.author, title=f"Task {i}")
        submission = services.submission_create(env_task=env_task, user=team.author)
        items = checklist_items(project_id=team.project.pk)
        for who, decision, marks in ((one, decision_one, marks_one), (two, decision_two, marks_two)):
            claimed = services.submission_claim_next(user=people[who])
            assert claimed == submission
            services.review_decide(submission=claimed, user=people[who], decision=decision,
                                   comment="" if decision == A else "Please tighten this.",
                                   checklist=[ChecklistMark(item.pk, bool(mark)) for item, mark in zip(items, marks, strict=True)])
    return people


def test_kappa_per_checklist_item_matches_scikit_learn(team, reviewed):
    from reviews.selectors.stats import checklist_agreement

    rows = checklist_agreement(scope=review_stats_scope(user=team.reviewer))
    assert len(rows) == 5
    for index, row in enumerate(rows):
        first = [s[4][index] for s in SCENARIO]
        second = [s[5][index] for s in SCENARIO]
        assert row.agreement.n == len(SCENARIO)
        expected = _kappa(first, second)
        if math.isnan(expected):
            assert index == 0 and row.agreement.kappa is None and row.agreement.kappa_label == "—"
        else:
            assert row.agreement.kappa == pytest.approx(expected, abs=1e-4), row.text
    assert any(0 < (r.agreement.kappa or 0) < 1 for r in rows)  # partial agreement, not a trivial case


def _pair(reviewer_a: str, reviewer_b: str):
    """The scenario's rows shared by two reviewers, each seen from reviewer_a's side."""
    shared = []
    for one, two, d1, d2, m1, m2 in SCENARIO:
        if (one, two) == (reviewer_a, reviewer_b):
            shared.append((d1, d2, m1, m2))
        elif (two, one) == (reviewer_a, reviewer_b):
            shared.append((d2, d1, m2, m1))
    return shared


def test_kappa_per_pair_of_reviewers_matches_scikit_learn(team, reviewed):
    from reviews.selectors.stats import pair_rows, reviewer_pairs

    scope = review_stats_scope(user=team.admin)
    rows = pair_rows(scope=scope, pairs=list(reviewer_pairs(scope=scope)))
    by_names = {frozenset((r.first, r.second)): r for r in rows}
    assert set(by_names) == {frozenset((team.reviewer.username, "second_reviewer")),
                             frozenset((team.reviewer.username, team.admin.username))}
    pair = by_names[frozenset((team.reviewer.username, "second_reviewer"))]
    shared = _pair("first", "second")
    assert pair.shared == len(shared) == 7 and rows[0] is pair  # the pair with most shared first
    decisions = _kappa([int(d1 == A) for d1, _, _, _ in shared], [int(d2 == A) for _, d2, _, _ in shared])
    assert 0 < decisions < 1
    assert pair.decisions.kappa == pytest.approx(decisions, abs=1e-4)
    answers = _kappa([m for _, _, m1, _ in shared for m in m1], [m for _, _, _, m2 in shared for m in m2])
    assert pair.checklist.n == 5 * len(shared)
    assert pair.checklist.kappa == pytest.approx(answers, abs=1e-4)
    other = by_names[frozenset((team.reviewer.username, team.admin.username))]
    shared = _pair("first", "admin")
    assert other.shared == 2
    assert other.decisions.kappa == pytest.approx(
        _kappa([int(d1 == A) for d1, _, _, _ in shared], [int(d2 == A) for _, d2, _, _ in shared]), abs=1e-4)


def test_agreement_when_kappa_is_undefined_or_degenerate():
    assert Agreement().kappa is None and Agreement().kappa_label == "—"
    assert Agreement(both_pass=6).kappa is None  # everyone passed everything
    assert Agreement(both_fail=3).kappa_label == "—"
    # One pair that disagreed: kappa would be 0.00, read as "no better than chance" from one answer.
    assert Agreement(first_only=1).kappa is None and Agreement(first_only=1).undefined_because.startswith("One shared answer")
    assert Agreement(both_pass=1, first_only=1).kappa is not None
    # One rater always passes, the other never: no agreement at all, kappa 0 as scikit-learn says.
    assert Agreement(first_only=4).kappa == pytest.approx(_kappa([1] * 4, [0] * 4)) == 0
    assert Agreement(both_pass=3, both_fail=2).kappa == 1.0


# --- The queue's figures -------------------------------------------------------------------

def test_queue_depth_time_in_queue_and_approval_rate(team, reviewed, world):
    from reviews.selectors.stats import queue_over_time, review_stats_summary, reviewer_activity, reviewer_rows

    now = timezone.now()
    # The first reviewer took 10, 20, … minutes from claim to decision.
    for i, review in enumerate(Review.objects.filter(reviewer=team.reviewer).order_by("pk")):
        Review.objects.filter(pk=review.pk).update(claimed_at=review.created_at - timedelta(minutes=10 * (i + 1)))
    # Submission i waited i + 1 hours before its first reviewer claimed it: 1 h … 9 h.
    for i, submission in enumerate(Submission.objects.order_by("pk")):
        first_claim = min(review.claimed_at for review in Review.objects.filter(submission=submission))
        Submission.objects.filter(pk=submission.pk).update(created_at=first_claim - timedelta(hours=i + 1))
    waiting = services.submission_create(env_task=factories.env_task(world, team.author, title="Waiting"), user=team.author)
    Submission.objects.filter(pk=waiting.pk).update(created_at=now - timedelta(days=3))

    scope = review_stats_scope(user=team.reviewer)
    summary = review_stats_summary(scope=scope)
    assert summary.waiting == 1 and summary.adjudication == 3  # rows 2, 4 and 8 disagree
    assert summary.decided_count == 9
    assert abs(summary.wait_median - timedelta(hours=5)) < timedelta(seconds=5)
    assert abs(summary.wait_p90 - timedelta(hours=9)) < timedelta(seconds=5)  # nearest rank: the 9th of 9
    assert timedelta(days=3) <= summary.oldest_waiting_age < timedelta(days=3, minutes=1)
    approvals = sum((d1 == A) + (d2 == A) for _, _, d1, d2, _, _ in SCENARIO)
    assert (summary.reviews, summary.approvals) == (18, approvals)

    rows = {r.username: r for r in reviewer_rows(scope=scope, activity=list(reviewer_activity(scope=scope)))}
    first = rows[team.reviewer.username]
    assert (first.reviews, first.last_7_days, first.last_30_days) == (9, 9, 9)
    assert first.approvals == sum((d1 if one == "first" else d2) == A for one, _, d1, d2, _, _ in SCENARIO)
    assert abs(first.decision_time_median - timedelta(minutes=50)) < timedelta(seconds=5)  # the 5th of 10…90 min
    assert rows["second_reviewer"].reviews == 7

    days = queue_over_time(scope=scope)
    assert len(days) == 30 and days[-1].day == timezone.localdate()
    # All submitted in the last 9 hours (today, or some yesterday), but one three days ago.
    assert sum(d.submitted for d in days) == 10 and sum(d.decided for d in days) == 6
    assert days[-1].waiting == 4  # 3 with an admin + 1 waiting
    assert (days[-4].submitted, days[-4].waiting) == (1, 1) and days[-5].waiting == 0


# --- The page ----------------------------------------------------------------------------

URL = "/reviews/stats/"


def test_page_shows_the_numbers_and_agreement_to_a_reviewer(client, team, reviewed):
    client.force_login(team.reviewer)
    response = client.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="stat-adjudication">3<' in html
    assert 'id="stat-approval-rate">' in html and "second_reviewer" in html
    decisions = _kappa(*zip(*[(int(d1 == A), int(d2 == A)) for d1, d2, _, _ in _pair("first", "second")], strict=True))
    assert f"<strong>{decisions:.2f}</strong>" in html
    assert "The world is realistic and consistent" in html and "n = 9" in html
    assert "<strong>—</strong>" in html  # item 0: everyone passed it
    assert 'class="q-plot"' in html and 'id="stats-approval-plot"' in html and "<path d=\"M" in html
    assert "No reviews yet" not in html


def test_htmx_asks_for_one_table(client, team, reviewed):
    client.force_login(team.reviewer)
    response = client.get(URL, {"part": "pairs"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section class="card" id="stats-pairs">')
    assert "second_reviewer" in html and "stats-cards" not in html and "<html" not in html
    response = client.get(URL, {"part": "reviewers"}, headers={"HX-Request": "true"})
    assert response.content.decode().lstrip().startswith('<section class="card" id="stats-reviewers">')


def test_empty_state_before_any_review(client, team, env_task):
    services.submission_create(env_task=env_task, user=team.author)
    client.force_login(team.reviewer)
    html = client.get(URL).content.decode()
    assert "No reviews yet. Once reviewers decide on submissions, their agreement appears here." in html
    assert 'id="stat-waiting">1<' in html


def test_other_projects_are_not_shown(client, team, other_team, reviewed):
    client.force_login(other_team.reviewer)
    assert client.get(URL, {"project": team.project.pk}).status_code == 404
    html = client.get(URL).content.decode()
    assert "No reviews yet" in html and "second_reviewer" not in html
    client.force_login(team.author)  # a member who does not review
    assert client.get(URL, {"project": team.project.pk}).status_code == 404
    assert "You do not review any project yet" in client.get(URL).content.decode()
    assert client.get("/api/review-stats/", {"project": team.project.pk}).status_code == 404


def test_project_filter(client, team, other_team, reviewed):
    from accounts.models import Membership

    Membership.objects.create(project=other_team.project, user=team.reviewer, role=Role.REVIEWER)
    client.force_login(team.reviewer)
    html = client.get(URL).content.decode()
    assert f'<option value="{other_team.project.pk}">' in html
    html = client.get(URL, {"project": other_team.project.pk}).content.decode()
    assert "No reviews yet" in html
    html = client.get(URL, {"project": team.project.pk}).content.decode()
    assert "second_reviewer" in html and "selected" in html


def _bulk(team, env_task, reviewers: list, count: int) -> None:
    """`count` submissions of one task, each decided by two reviewers with a full checklist (ORM rows)."""
    services.checklist_ensure(project_id=team.project.pk)
    items = list(ChecklistItem.objects.filter(project=team.project))
    rubric = env_task.rubric_versions.order_by("-number").first()
    start = Submission.objects.filter(env_task=env_task).count()
    now = timezone.now()
    submissions = Submission.objects.bulk_create([
        Submission(project=team.project, env_task=env_task, number=start + i + 1, title=f"Task v{i}", rubric_version=rubric,
                   snapshot={}, submitted_by=team.author,
                   status=[SubmissionStatus.APPROVED, SubmissionStatus.QUEUED, SubmissionStatus.ADJUDICATION][i % 3])
        for i in range(count)])
    reviews = Review.objects.bulk_create([
        Review(submission=s, reviewer=reviewer, decision=[A, R][(i + j) % 2], claimed_at=now - timedelta(minutes=i % 50))
        for i, s in enumerate(submissions) for j, reviewer in enumerate(reviewers[i % 2:i % 2 + 2])])
    ChecklistAnswer.objects.bulk_create([
        ChecklistAnswer(review=r, item=item, item_text=item.text, passed=(r.pk + item.pk) % 3 > 0) for r in reviews for item in items])


def _queries(client) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(URL).status_code == 200
    return len(captured)


def test_query_count_is_the_same_for_10_and_200_submissions(client, team, env_task):
    reviewers = [team.reviewer, team.admin, factories.member(team.project, Role.REVIEWER)]
    client.force_login(team.reviewer)
    _bulk(team, env_task, reviewers, 10)
    few = _queries(client)
    _bulk(team, env_task, reviewers, 190)
    assert _queries(client) == few
    assert Submission.objects.count() == 200


# --- The API -------------------------------------------------------------------------------

def test_api_gives_the_same_kappa(client, team, reviewed):
    client.force_login(team.reviewer)
    response = client.get("/api/review-stats/", {"project": team.project.pk})
    assert response.status_code == 200
    data = response.json()
    assert data["project"] == team.project.pk
    assert data["summary"]["adjudication"] == 3 and data["summary"]["reviews"] == 18
    items = data["checklist_items"]
    assert [i["n"] for i in items] == [9] * 5 and items[0]["kappa"] is None
    for index, item in enumerate(items[1:], start=1):
        expected = _kappa([s[4][index] for s in SCENARIO], [s[5][index] for s in SCENARIO])
        assert item["kappa"] == pytest.approx(expected, abs=1e-4)
    pair = data["pairs"]["results"][0]
    assert sorted(pair["reviewers"]) == sorted([team.reviewer.username, "second_reviewer"]) and pair["shared_submissions"] == 7
    shared = _pair("first", "second")
    assert pair["decisions"]["kappa"] == pytest.approx(
        _kappa([int(d1 == A) for d1, _, _, _ in shared], [int(d2 == A) for _, d2, _, _ in shared]), abs=1e-4)
    assert data["pairs"]["count"] == 2 and data["reviewers"]["count"] == 3
    assert len(data["queue_by_day"]) == 30
    assert len(client.get("/api/review-stats/", {"limit": 1}).json()["reviewers"]["results"]) == 1
    assert client.get("/api/review-stats/", {"projetc": 1}).status_code == 400


def test_reviewers_and_pairs_are_paged(client, team, reviewed, monkeypatch):
    from reviews.views import stats as stats_views

    monkeypatch.setattr(stats_views, "PAGE_SIZE", 1)
    client.force_login(team.reviewer)
    html = client.get(URL).content.decode()
    assert "Page 1 of 3 · 3 in all" in html and "Page 1 of 2 · 2 in all" in html  # 3 reviewers, 2 pairs
    assert f'id="stats-reviewer-{team.reviewer.pk}"' in html  # the busiest first
    response = client.get(URL, {"part": "reviewers", "reviewers_page": 3}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert "Page 3 of 3" in html and f'id="stats-reviewer-{team.reviewer.pk}"' not in html
    assert 'hx-get="?part=reviewers&amp;reviewers_page=2"' in html
    html = client.get(URL, {"part": "pairs", "pairs_page": 2}, headers={"HX-Request": "true"}).content.decode()
    assert team.admin.username in html and "second_reviewer" not in html  # the pair sharing fewer comes second
