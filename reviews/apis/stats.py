"""The reviewer dashboard as JSON: the same numbers as /reviews/stats/, from the same selectors."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.apis import PROJECT_PARAMETER, READ_ERRORS, ApiView, InvalidRequest
from reviews.selectors import stats as selectors


def _agreement_field(name: str, help_text: str) -> serializers.Serializer:
    return inline_serializer(name, {
        "n": serializers.IntegerField(help_text="How many shared answers (for a pair of reviewers' decisions: shared submissions)."),
        "kappa": serializers.FloatField(allow_null=True,
                                        help_text="Cohen's kappa; null when undefined (no pairs, or every answer the same)."),
        "observed_agreement": serializers.FloatField(allow_null=True),
        "both_pass": serializers.IntegerField(),
        "first_only": serializers.IntegerField(),
        "second_only": serializers.IntegerField(),
        "both_fail": serializers.IntegerField(),
    }, help_text=help_text)


def _table(name: str, row: serializers.Serializer) -> serializers.Serializer:
    return inline_serializer(name, {"count": serializers.IntegerField(), "results": row})


STATS_RESPONSE = inline_serializer("ReviewStats", {
    "project": serializers.IntegerField(allow_null=True, help_text="The project asked for; null: all the projects you review."),
    "summary": inline_serializer("ReviewStatsSummary", {
        "waiting": serializers.IntegerField(help_text="Waiting for a reviewer or being reviewed."),
        "adjudication": serializers.IntegerField(help_text="Reviewers disagree: waiting for an admin."),
        "oldest_waiting_since": serializers.DateTimeField(allow_null=True),
        "oldest_waiting_seconds": serializers.FloatField(allow_null=True),
        "time_in_queue": inline_serializer("TimeInQueue", {
            "n": serializers.IntegerField(), "median_seconds": serializers.FloatField(allow_null=True),
            "p90_seconds": serializers.FloatField(allow_null=True)}),
        "reviews": serializers.IntegerField(), "approvals": serializers.IntegerField(),
        "approval_rate": serializers.FloatField(allow_null=True),
    }),
    "reviewers": _table("ReviewerStatsTable", inline_serializer("ReviewerStats", {
        "reviewer": serializers.CharField(), "reviews": serializers.IntegerField(), "approvals": serializers.IntegerField(),
        "approval_rate": serializers.FloatField(), "last_7_days": serializers.IntegerField(), "last_30_days": serializers.IntegerField(),
        "decision_time_median_seconds": serializers.FloatField(allow_null=True)}, many=True)),
    "pairs": _table("ReviewerPairTable", inline_serializer("ReviewerPair", {
        "reviewers": serializers.ListField(child=serializers.CharField()),
        "shared_submissions": serializers.IntegerField(),
        "decisions": _agreement_field("ReviewerPairDecisionAgreement", "Approve vs request changes on the shared submissions."),
        "checklist": _agreement_field("ReviewerPairChecklistAgreement",
                                      "Their checklist answers on the shared submissions, all items pooled.")}, many=True)),
    "checklist_items": inline_serializer("ChecklistItemAgreement", {
        "item": serializers.IntegerField(), "text": serializers.CharField(), "active": serializers.BooleanField(),
        "project": serializers.CharField(), "n": serializers.IntegerField(), "kappa": serializers.FloatField(allow_null=True),
        "observed_agreement": serializers.FloatField(allow_null=True), "both_pass": serializers.IntegerField(),
        "first_only": serializers.IntegerField(), "second_only": serializers.IntegerField(), "both_fail": serializers.IntegerField(),
    }, many=True),
    "queue_by_day": inline_serializer("QueueDay", {
        "day": serializers.DateField(), "submitted": serializers.IntegerField(), "decided": serializers.IntegerField(),
        "waiting": serializers.IntegerField(help_text="Open at the day's end: waiting, being reviewed, or with an admin.")},
        many=True),
})


class ReviewStatsApi(ApiView):
    # The per-reviewer and per-pair tables grow with the team: both are paged with limit/offset.
    list_filters = ("project",)
    list_cursor = False

    @extend_schema(
        summary="The reviewer dashboard's numbers",
        description="Queue depth, time in queue, approval rate and throughput per reviewer, Cohen's kappa per checklist item "
        "and per pair of reviewers, and the queue per day over the last 30 days, over the projects where you review or "
        "administer. `limit` and `offset` page the reviewers and the pairs.",
        parameters=[PROJECT_PARAMETER],
        responses={200: STATS_RESPONSE, **READ_ERRORS},
    )
    def get(self, request: Request) -> Response:
        scope = selectors.review_stats_scope(user=request.user, project_id=self.int_param("project"))
        limit = min(int(request.query_params.get("limit") or self.pagination_class.default_limit), self.pagination_class.max_limit)
        offset = int(request.query_params.get("offset") or 0)
        if offset > 2**31:
            raise InvalidRequest("offset is too large.")
        reviewers = selectors.reviewer_activity(scope=scope)
        pairs = selectors.reviewer_pairs(scope=scope)
        return Response({
            "project": scope.project.pk if scope.project else None,
            "summary": selectors.review_stats_summary(scope=scope).as_dict(),
            "reviewers": {"count": reviewers.count(), "results": [
                row.as_dict() for row in selectors.reviewer_rows(scope=scope, activity=list(reviewers[offset:offset + limit]))]},
            "pairs": {"count": pairs.count(), "results": [
                row.as_dict() for row in selectors.pair_rows(scope=scope, pairs=list(pairs[offset:offset + limit]))]},
            "checklist_items": [row.as_dict() for row in selectors.checklist_agreement(scope=scope)],
            "queue_by_day": [day.as_dict() for day in selectors.queue_over_time(scope=scope)],
        })
