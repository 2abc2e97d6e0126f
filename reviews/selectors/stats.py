"""The reviewer dashboard's numbers, over the projects where the user reviews or administers:
queue depth and time in queue, approval rate and throughput per reviewer, Cohen's kappa per
checklist item and per pair of reviewers, and the queue per day.

A fixed number of queries whatever the number of submissions. Counts are SQL aggregates;
percentiles (no portable SQL aggregate) are taken from one float per row, computed by the
database and sorted here. Agreement is a self-join of reviews (or checklist answers) on the
same submission, reduced to its 2×2 table (both pass, first only, second only, both fail).
The tables that grow with the team (per reviewer, per pair) are querysets the caller pages;
a page's details are read for that page only."""

import math
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import cached_property

from django.db.models import Count, F, FloatField, Func, Min, Q, QuerySet
from django.db.models.functions import Coalesce, TruncDate
from django.http import Http404
from django.utils import timezone

from accounts.models import Project, Role, User
from reviews.models import ChecklistAnswer, ChecklistItem, Decision, Review, Submission, SubmissionStatus
from verification.metrics import cohen_kappa

CLOSED_STATUSES = (SubmissionStatus.APPROVED, SubmissionStatus.CHANGES_REQUESTED, SubmissionStatus.WITHDRAWN)
DECIDED_STATUSES = (SubmissionStatus.APPROVED, SubmissionStatus.CHANGES_REQUESTED)
WAITING_STATUSES = (SubmissionStatus.QUEUED, SubmissionStatus.CLAIMED)
QUEUE_DAYS = 30


# --- Scope ------------------------------------------------------------------------------

@dataclass(frozen=True)
class StatsScope:
    projects: list[Project]  # every project the user reviews or administers (the filter's choices)
    project: Project | None  # the one chosen with ?project=, if any

    @property
    def project_ids(self) -> list[int]:
        return [self.project.pk] if self.project else [p.pk for p in self.projects]


def review_stats_scope(*, user: User, project_id: int | None = None) -> StatsScope:
    """The projects the dashboard counts. A project the user does not review is a 404,
    as if it did not exist."""
    if not user.is_authenticated:
        raise Http404("No such project.")
    projects = list(Project.objects.filter(memberships__user=user, memberships__role__in=[Role.REVIEWER, Role.ADMIN])
                    .order_by("name", "id"))
    chosen = None
    if project_id is not None:
        chosen = next((p for p in projects if p.pk == project_id), None)
        if chosen is None:
            raise Http404("No such project among those you review.")
    return StatsScope(projects=projects, project=chosen)


# --- Kappa ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Agreement:
    """Two raters' pass/fail (or approve/request-changes) answers on the same things, as a
    2×2 table. `n` is how many things both answered."""

    both_pass: int = 0
    first_only: int = 0
    second_only: int = 0
    both_fail: int = 0

    @property
    def n(self) -> int:
        return self.both_pass + self.first_only + self.second_only + self.both_fail

    @property
    def observed(self) -> float | None:
        return (self.both_pass + self.both_fail) / self.n if self.n else None

    @property
    def undefined_because(self) -> str:
        """Why kappa has no value here ('' when it has one)."""
        if not self.n:
            return "No shared answers yet."
        if self.n == 1:  # (kappa would read 0.00 or 1.00 from a single answer: a figure, not a measurement)
            return "One shared answer: too few to measure agreement."
        if self.both_pass == self.n or self.both_fail == self.n:
            # Both raters gave one and the same answer every time: chance alone explains it.
            return "Everyone gave the same answer every time: agreement beyond chance cannot be measured."
        return ""

    @cached_property
    def kappa(self) -> float | None:
        if self.undefined_because:
            return None
        first = [True] * (self.both_pass + self.first_only) + [False] * (self.second_only + self.both_fail)
        second = ([True] * self.both_pass + [False] * self.first_only + [True] * self.second_only + [False] * self.both_fail)
        value = cohen_kappa(first, second)
        return None if value != value else round(value, 4)  # NaN: undefined

    @property
    def kappa_label(self) -> str:
        return "—" if self.kappa is None else f"{self.kappa:.2f}"

    def as_dict(self) -> dict:
        return {"n": self.n, "kappa": self.kappa, "observed_agreement": None if self.observed is None else round(self.observed, 4),
                "both_pass": self.both_pass, "first_only": self.first_only, "second_only": self.second_only,
                "both_fail": self.both_fail}


def _table(first: str, second: str, yes: object, no: object) -> dict:
    """Count() annotations of a 2×2 table over the rows of a self-join (one row per pair).
    Every condition is positive: a negated lookup across the join would become a subquery
    instead of testing the joined row."""
    first_yes, first_no = Q(**{first: yes}), Q(**{first: no})
    second_yes, second_no = Q(**{second: yes}), Q(**{second: no})
    return {
        "both_pass": Count("pk", filter=first_yes & second_yes),
        "first_only": Count("pk", filter=first_yes & second_no),
        "second_only": Count("pk", filter=first_no & second_yes),
        "both_fail": Count("pk", filter=first_no & second_no),
    }


def _agreement(row: dict) -> Agreement:
    return Agreement(row["both_pass"], row["first_only"], row["second_only"], row["both_fail"])


# --- Durations --------------------------------------------------------------------------

def duration_label(value: timedelta | None) -> str:
    if value is None:
        return "—"
    seconds = int(value.total_seconds())
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} days {hours} h" if hours else f"{days} days"


class SecondsBetween(Func):
    """later - earlier in seconds, computed by the database itself. (Django's datetime
    subtraction is a Python function per row on SQLite: sorting 10,000 rows by it took a
    second.)"""

    output_field = FloatField()
    arity = 2
    template = "CAST(EXTRACT(EPOCH FROM (%(expressions)s)) AS double precision)"  # PostgreSQL: numeric otherwise
    arg_joiner = " - "

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, template="((julianday(%(expressions)s)) * 86400.0)",
                           arg_joiner=") - julianday(", **extra_context)


def _seconds(value: timedelta | None) -> float | None:
    return None if value is None else round(value.total_seconds(), 1)


def _median(values: list[float]) -> timedelta | None:
    """The median of seconds (the mean of the two middle values when their number is even)."""
    if not values:
        return None
    values = sorted(float(v) for v in values)
    middle = len(values) // 2
    return timedelta(seconds=values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2)


def _p90(values: list[float]) -> timedelta | None:
    """The 90th percentile of seconds, by nearest rank: 90% of the values are at most this."""
    if not values:
        return None
    return timedelta(seconds=float(sorted(values)[math.ceil(0.9 * len(values)) - 1]))


# --- Summary ----------------------------------------------------------------------------

@dataclass
class StatsSummary:
    waiting: int  # queued + being reviewed now
    adjudication: int
    oldest_waiting_since: datetime | None
    decided_count: int  # submissions with at least one review: the time-in-queue figures' n
    wait_median: timedelta | None
    wait_p90: timedelta | None
    reviews: int
    approvals: int

    @property
    def oldest_waiting_age(self) -> timedelta | None:
        return None if self.oldest_waiting_since is None else timezone.now() - self.oldest_waiting_since

    @property
    def approval_rate(self) -> float | None:
        return self.approvals / self.reviews if self.reviews else None

    def as_dict(self) -> dict:
        return {
            "waiting": self.waiting, "adjudication": self.adjudication,
            "oldest_waiting_since": self.oldest_waiting_since, "oldest_waiting_seconds": _seconds(self.oldest_waiting_age),
            "time_in_queue": {"n": self.decided_count, "median_seconds": _seconds(self.wait_median),
                              "p90_seconds": _seconds(self.wait_p90)},
            "reviews": self.reviews, "approvals": self.approvals,
            "approval_rate": None if self.approval_rate is None else round(self.approval_rate, 4),
        }


def review_stats_summary(*, scope: StatsScope) -> StatsSummary:
    ids = scope.project_ids
    counts = Submission.objects.filter(project_id__in=ids).aggregate(
        waiting=Count("pk", filter=Q(status__in=WAITING_STATUSES)),
        adjudication=Count("pk", filter=Q(status=SubmissionStatus.ADJUDICATION)),
        oldest=Min("created_at", filter=Q(status__in=WAITING_STATUSES)),
    )
    # Time in queue: from submission to the first reviewer taking it (their claim, or the review
    # itself where no claim was recorded), in seconds computed by the database. Percentiles are
    # not a portable SQL aggregate: one float per reviewed submission is read and sorted here
    # (tens of milliseconds at 10,000; window functions to pick them out took ten times longer on SQLite).
    waits = list(Submission.objects.filter(project_id__in=ids, reviews__isnull=False).values("pk")
                 .annotate(taken=Min(Coalesce("reviews__claimed_at", "reviews__created_at")))
                 .annotate(wait=SecondsBetween("taken", "created_at")).order_by().values_list("wait", flat=True))
    reviews = Review.objects.filter(submission__project_id__in=ids).aggregate(
        reviews=Count("pk"), approvals=Count("pk", filter=Q(decision=Decision.APPROVE)))
    return StatsSummary(waiting=counts["waiting"], adjudication=counts["adjudication"], oldest_waiting_since=counts["oldest"],
                        decided_count=len(waits), wait_median=_median(waits), wait_p90=_p90(waits), **reviews)


# --- Per reviewer -----------------------------------------------------------------------

@dataclass
class ReviewerRow:
    reviewer_id: int
    username: str
    reviews: int
    approvals: int
    last_7_days: int
    last_30_days: int
    decision_time_median: timedelta | None = None

    @property
    def approval_rate(self) -> float:
        return self.approvals / self.reviews if self.reviews else 0.0

    @property
    def decision_time_label(self) -> str:
        return duration_label(self.decision_time_median)

    def as_dict(self) -> dict:
        return {"reviewer": self.username, "reviews": self.reviews, "approvals": self.approvals,
                "approval_rate": round(self.approval_rate, 4), "last_7_days": self.last_7_days,
                "last_30_days": self.last_30_days, "decision_time_median_seconds": _seconds(self.decision_time_median)}


def reviewer_activity(*, scope: StatsScope) -> QuerySet:
    """One row per reviewer (dicts), busiest first: page it, then give the page to reviewer_rows."""
    now = timezone.now()
    return (Review.objects.filter(submission__project_id__in=scope.project_ids, reviewer__isnull=False)
            .values("reviewer_id", "reviewer__username")
            .annotate(reviews=Count("pk"), approvals=Count("pk", filter=Q(decision=Decision.APPROVE)),
                      last_7_days=Count("pk", filter=Q(created_at__gte=now - timedelta(days=7))),
                      last_30_days=Count("pk", filter=Q(created_at__gte=now - timedelta(days=30))))
            .order_by("-reviews", "reviewer__username", "reviewer_id"))


def reviewer_rows(*, scope: StatsScope, activity: list[dict]) -> list[ReviewerRow]:
    """A page of reviewer_activity, with each reviewer's median time from claim to decision."""
    rows = [ReviewerRow(reviewer_id=a["reviewer_id"], username=a["reviewer__username"], reviews=a["reviews"],
                        approvals=a["approvals"], last_7_days=a["last_7_days"], last_30_days=a["last_30_days"]) for a in activity]
    if rows:
        took: dict[int, list[float]] = {}
        for reviewer_id, seconds in (Review.objects.filter(submission__project_id__in=scope.project_ids, claimed_at__isnull=False,
                                                           reviewer_id__in=[r.reviewer_id for r in rows])
                                     .annotate(took=SecondsBetween("created_at", "claimed_at")).values_list("reviewer_id", "took")):
            took.setdefault(reviewer_id, []).append(seconds)
        for row in rows:
            row.decision_time_median = _median(took.get(row.reviewer_id, []))
    return rows


# --- Agreement per checklist item and per pair of reviewers ----------------------------------

@dataclass
class ItemAgreement:
    item_id: int
    text: str
    active: bool
    project: str
    agreement: Agreement

    def as_dict(self) -> dict:
        return {"item": self.item_id, "text": self.text, "active": self.active, "project": self.project,
                **self.agreement.as_dict()}


def _answer_pairs(scope: StatsScope, *conditions: Q, **order) -> QuerySet:
    """Checklist answers joined to the other answers to the same item on the same submission
    (the `review__submission__reviews__answers` side), each pair once. All conditions go in
    this one filter() call: only there do they share the join (a second call joins anew)."""
    return ChecklistAnswer.objects.filter(
        *conditions, review__submission__project_id__in=scope.project_ids, item__isnull=False,
        review__submission__reviews__answers__item_id=F("item_id"), **order,
    )


def _answer_table() -> dict:
    return _table("passed", "review__submission__reviews__answers__passed", True, False)


def checklist_agreement(*, scope: StatsScope) -> list[ItemAgreement]:
    """Cohen's kappa per checklist item, pooled over every pair of reviews of one submission
    (the earlier review is the first rater). Items in checklist order; retired ones too."""
    # Grouped by the item's id alone (its text and project are read after): grouping 10,000
    # submissions' answer pairs by long text keys took four times longer on SQLite.
    tables = {r["item_id"]: _agreement(r) for r in (_answer_pairs(scope, review__submission__reviews__id__gt=F("review_id"))
                                                    .values("item_id").annotate(**_answer_table()).order_by())}
    items = ChecklistItem.objects.filter(pk__in=tables).select_related("project").order_by("project__name", "project_id", "position", "id")
    return [ItemAgreement(item.pk, item.text, item.active, item.project.name, tables[item.pk]) for item in items]


@dataclass
class PairAgreement:
    first: str
    second: str
    first_id: int
    second_id: int
    decisions: Agreement  # approve = pass
    checklist: Agreement = field(default_factory=Agreement)

    @property
    def shared(self) -> int:
        return self.decisions.n

    def as_dict(self) -> dict:
        return {"reviewers": [self.first, self.second], "shared_submissions": self.shared,
                "decisions": self.decisions.as_dict(), "checklist": self.checklist.as_dict()}


def reviewer_pairs(*, scope: StatsScope) -> QuerySet:
    """One row per pair of reviewers who reviewed the same submissions (dicts), most shared
    first, with the 2×2 table of their decisions: page it, then give the page to pair_rows."""
    return (Review.objects.filter(submission__project_id__in=scope.project_ids, reviewer__isnull=False,
                                  submission__reviews__reviewer_id__gt=F("reviewer_id"))
            .values("reviewer_id", "reviewer__username", "submission__reviews__reviewer_id",
                    "submission__reviews__reviewer__username")
            .annotate(**_table("decision", "submission__reviews__decision", Decision.APPROVE, Decision.REQUEST_CHANGES))
            .annotate(shared=F("both_pass") + F("first_only") + F("second_only") + F("both_fail"))
            .order_by("-shared", "reviewer__username", "submission__reviews__reviewer__username", "reviewer_id",
                      "submission__reviews__reviewer_id"))


def pair_rows(*, scope: StatsScope, pairs: list[dict]) -> list[PairAgreement]:
    """A page of reviewer_pairs, with kappa over the pair's checklist answers (all items pooled)."""
    rows = [PairAgreement(first=p["reviewer__username"], second=p["submission__reviews__reviewer__username"],
                          first_id=p["reviewer_id"], second_id=p["submission__reviews__reviewer_id"], decisions=_agreement(p))
            for p in pairs]
    if rows:
        wanted = Q()
        for row in rows:
            wanted |= Q(review__reviewer_id=row.first_id, review__submission__reviews__reviewer_id=row.second_id)
        answers = (_answer_pairs(scope, wanted, review__submission__reviews__reviewer_id__gt=F("review__reviewer_id"))
                   .values("review__reviewer_id", "review__submission__reviews__reviewer_id").annotate(**_answer_table())
                   .order_by())
        tables = {(a["review__reviewer_id"], a["review__submission__reviews__reviewer_id"]): _agreement(a) for a in answers}
        for row in rows:
            row.checklist = tables.get((row.first_id, row.second_id), Agreement())
    return rows


# --- The queue per day -------------------------------------------------------------------

@dataclass
class QueueDay:
    day: date
    submitted: int
    decided: int
    waiting: int  # open at the day's end: waiting, being reviewed or waiting for an admin

    def as_dict(self) -> dict:
        return {"day": self.day.isoformat(), "submitted": self.submitted, "decided": self.decided, "waiting": self.waiting}


def queue_over_time(*, scope: StatsScope, days: int = QUEUE_DAYS) -> list[QueueDay]:
    """Per day of the last `days` (today included): submitted, decided (approved or sent back)
    and still open at the day's end. A closed submission's status is final, so it closed when
    it was last updated; three grouped queries whatever the number of submissions."""
    tz = timezone.get_current_timezone()
    today = timezone.localdate()
    first_day = today - timedelta(days=days - 1)
    start = datetime.combine(first_day, datetime.min.time(), tzinfo=tz)
    submissions = Submission.objects.filter(project_id__in=scope.project_ids)
    before = submissions.aggregate(created=Count("pk", filter=Q(created_at__lt=start)),
                                   closed=Count("pk", filter=Q(status__in=CLOSED_STATUSES, updated_at__lt=start)))
    created = dict(submissions.filter(created_at__gte=start).annotate(day=TruncDate("created_at", tzinfo=tz))
                   .values("day").annotate(n=Count("pk")).order_by().values_list("day", "n"))
    closed: dict[date, dict[str, int]] = {}
    for day, status, n in (submissions.filter(status__in=CLOSED_STATUSES, updated_at__gte=start)
                           .annotate(day=TruncDate("updated_at", tzinfo=tz)).values("day", "status")
                           .annotate(n=Count("pk")).order_by().values_list("day", "status", "n")):
        closed.setdefault(day, {})[status] = n
    open_now = before["created"] - before["closed"]
    series = []
    for offset in range(days):
        day = first_day + timedelta(days=offset)
        closed_today = closed.get(day, {})
        decided = sum(closed_today.get(s, 0) for s in DECIDED_STATUSES)
        open_now += created.get(day, 0) - decided - closed_today.get(SubmissionStatus.WITHDRAWN, 0)
        series.append(QueueDay(day=day, submitted=created.get(day, 0), decided=decided, waiting=open_now))
    return series
