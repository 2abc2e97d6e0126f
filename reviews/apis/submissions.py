"""The QA API: submit a task (behind the project's gates), withdraw it, the review queue,
claims, decisions with the checklist, adjudication, and the project's review policy. Thin:
the services enforce who may do what (an author never decides on their own submission)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.selectors import project_get_for_user
from authoring.selectors import env_task_get_for_user
from core.apis import ERRORS, ID_PARAMETER, PROJECT_PARAMETER, ApiView, id_field, status_parameter, text_field, username_field
from reviews import selectors, services
from reviews.forms import ReviewPolicyForm
from reviews.models import Decision, SubmissionStatus


class ChecklistAnswerSerializer(serializers.Serializer):
    item = serializers.IntegerField(source="item_id", allow_null=True, help_text="The checklist item (null once it was deleted).")
    item_text = serializers.CharField(help_text="The item's wording when it was answered.")
    passed = serializers.BooleanField()
    note = serializers.CharField()


class ReviewSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=Decision.choices)
    comment = serializers.CharField()
    reviewer = username_field("reviewer")
    checklist = ChecklistAnswerSerializer(source="answers", many=True, read_only=True)
    created_at = serializers.DateTimeField()


class AdjudicationSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=Decision.choices)
    note = serializers.CharField()
    admin = username_field("admin")
    created_at = serializers.DateTimeField()


class SubmissionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.IntegerField(source="project_id")
    task = serializers.IntegerField(source="env_task_id")
    number = serializers.IntegerField(help_text="The task's version number: 1 for its first submission.")
    title = serializers.CharField()
    rubric_version = serializers.IntegerField(source="rubric_version_id")
    status = serializers.ChoiceField(choices=SubmissionStatus.choices)
    submitted_by = username_field("submitted_by")
    claimed_by = username_field("claimed_by")
    claimed_at = serializers.DateTimeField(allow_null=True)
    approvals_required = serializers.IntegerField(help_text="Distinct reviewers who must approve (the policy when submitted).")
    created_at = serializers.DateTimeField()


class SubmissionDetailSerializer(SubmissionSerializer):
    snapshot = serializers.JSONField(help_text="The frozen task, rubric and world, exactly as submitted.")
    author_note = serializers.CharField()
    reviews = serializers.SerializerMethodField(help_text="The reviewers' decisions with their checklists. While you hold the "
                                                "claim and have not decided, the others' stay hidden (reviews are independent).")
    adjudication = serializers.SerializerMethodField(help_text="An admin's decision when the reviewers disagreed.")

    @extend_schema_field(ReviewSerializer(many=True))
    def get_reviews(self, submission) -> list:
        reviews, _ = selectors.reviews_visible_to(submission=submission, user=self.context["request"].user)
        return ReviewSerializer(reviews, many=True).data

    @extend_schema_field(AdjudicationSerializer(allow_null=True))
    def get_adjudication(self, submission) -> dict | None:
        adjudication = getattr(submission, "adjudication", None)
        return AdjudicationSerializer(adjudication).data if adjudication else None


class SubmitSerializer(serializers.Serializer):
    note = text_field(required=False, default="", help_text="A note for the reviewers.")


class ChecklistMarkSerializer(serializers.Serializer):
    item = id_field(help_text="A checklist item's id (GET /api/projects/{id}/review-policy/ lists them).")
    passed = serializers.BooleanField()
    note = text_field(required=False, default="")


class DecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=Decision.choices)
    comment = text_field(required=False, default="", help_text="Required when requesting changes, unless a checklist item fails.")
    checklist = ChecklistMarkSerializer(many=True, required=False, default=list,
                                        help_text="An answer for every item of the project's checklist (required to decide).")


class AdjudicateSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=Decision.choices)
    note = text_field(help_text="Why: the author and the reviewers read it.")


class ChecklistItemSerializer(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True, help_text="null for a default item not yet saved (it is saved with the "
                                  "project's first submission).")
    text = serializers.CharField()


class ReviewPolicySerializer(serializers.Serializer):
    approvals_required = serializers.IntegerField(min_value=1, max_value=5)
    gate_graded_rollouts = serializers.BooleanField()
    min_graded_rollouts = serializers.IntegerField(min_value=1, max_value=1000)
    gate_probes = serializers.BooleanField()
    gate_difficulty = serializers.BooleanField()
    pass1_ceiling = serializers.FloatField(min_value=0, max_value=1)
    passk_floor = serializers.FloatField(min_value=0, max_value=1)
    queue_alert_threshold = serializers.IntegerField(min_value=0, max_value=100_000)
    checklist = ChecklistItemSerializer(many=True, read_only=True)


def _detail(submission_id: int, request: Request) -> dict:
    submission = selectors.submission_get_for_user(user=request.user, pk=submission_id)
    return SubmissionDetailSerializer(submission, context={"request": request}).data


@extend_schema(parameters=[ID_PARAMETER])
class EnvTaskSubmitApi(ApiView):
    @extend_schema(
        summary="Submit the task for review",
        description="Freezes the task, its current rubric and its world into a new immutable version and queues it. "
        "Refused (400, with `gates` listing each unmet gate and what to do) while a gate of the project's policy is not met.",
        request=SubmitSerializer,
        responses={201: SubmissionDetailSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        env_task = env_task_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(SubmitSerializer)
        submission = services.submission_create(env_task=env_task, user=request.user, note=data["note"])
        return Response(_detail(submission.pk, request), status=status.HTTP_201_CREATED)


class SubmissionListApi(ApiView):
    list_filters = ("project", "status")

    @extend_schema(
        summary="Submissions of your projects",
        parameters=[PROJECT_PARAMETER, status_parameter(SubmissionStatus.values)],
        responses=SubmissionSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        submissions = selectors.submission_list_for_user(user=request.user, project_id=self.int_param("project"))
        wanted_status = self.choice_param("status", SubmissionStatus.values)
        if wanted_status:
            submissions = submissions.filter(status=wanted_status)
        return self.paginated(submissions, SubmissionSerializer)


@extend_schema(parameters=[ID_PARAMETER])
class SubmissionDetailApi(ApiView):
    @extend_schema(summary="One submission, with its snapshot and review", responses={200: SubmissionDetailSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(_detail(pk, request))


class ReviewQueueApi(ApiView):
    list_filters = ()

    @extend_schema(
        summary="Submissions waiting for a reviewer",
        description="In projects where you review, oldest first, never your own nor one you already reviewed.",
        responses=SubmissionSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        return self.paginated(selectors.review_queue_for_user(user=request.user), SubmissionSerializer)


class ReviewClaimNextApi(ApiView):
    @extend_schema(
        summary="Claim the oldest waiting submission",
        description="No two reviewers get the same item. If you already hold one, you get that one back. "
        "When nothing is waiting the answer is 204 with no body.",
        request=None,
        responses={
            200: SubmissionDetailSerializer,
            204: OpenApiResponse(description="The queue is empty: nothing was claimed."),
        },
    )
    def post(self, request: Request) -> Response:
        submission = services.submission_claim_next(user=request.user)
        if submission is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        # Read back through the selector, so the answer never shows what it must not.
        return Response(_detail(submission.pk, request))


@extend_schema(parameters=[ID_PARAMETER])
class SubmissionReleaseApi(ApiView):
    @extend_schema(
        summary="Hand a claimed submission back to the queue",
        request=None,
        responses={200: SubmissionDetailSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        submission = selectors.submission_get_for_user(user=request.user, pk=pk)
        services.submission_release(submission=submission, user=request.user)
        return Response(_detail(submission.pk, request))


@extend_schema(parameters=[ID_PARAMETER])
class SubmissionDecisionApi(ApiView):
    @extend_schema(
        summary="Approve, or request changes on, a submission you claimed",
        request=DecisionSerializer,
        responses={200: SubmissionDetailSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        submission = selectors.submission_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(DecisionSerializer)
        marks = [services.ChecklistMark(item_id=m["item"], passed=m["passed"], note=m["note"]) for m in data["checklist"]]
        services.review_decide(submission=submission, user=request.user, decision=data["decision"], comment=data["comment"],
                               checklist=marks)
        return Response(_detail(submission.pk, request))


@extend_schema(parameters=[ID_PARAMETER])
class SubmissionWithdrawApi(ApiView):
    @extend_schema(
        summary="Withdraw a version still in review (authors)",
        description="The task becomes a draft again; reviews made so far stay on record.",
        request=None,
        responses={200: SubmissionDetailSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        submission = selectors.submission_get_for_user(user=request.user, pk=pk)
        services.submission_withdraw(submission=submission, user=request.user)
        return Response(_detail(submission.pk, request))


@extend_schema(parameters=[ID_PARAMETER])
class SubmissionAdjudicateApi(ApiView):
    @extend_schema(
        summary="Settle a submission whose reviewers disagree (admins)",
        request=AdjudicateSerializer,
        responses={200: SubmissionDetailSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        submission = selectors.submission_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(AdjudicateSerializer)
        services.submission_adjudicate(submission=submission, user=request.user, decision=data["decision"], note=data["note"])
        return Response(_detail(submission.pk, request))


def _policy(project_id: int) -> dict:
    policy = selectors.review_policy_for_project(project_id=project_id)
    data = {name: getattr(policy, name) for name in ReviewPolicyForm.Meta.fields}
    data["checklist"] = [{"id": item.pk, "text": item.text} for item in selectors.checklist_items(project_id=project_id)]
    return ReviewPolicySerializer(data).data


@extend_schema(parameters=[ID_PARAMETER])
class ReviewPolicyApi(ApiView):
    @extend_schema(summary="The project's review policy and checklist", responses={200: ReviewPolicySerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(_policy(project_get_for_user(user=request.user, pk=pk).pk))

    @extend_schema(summary="Change the project's review policy (admins)", request=ReviewPolicySerializer,
                   responses={200: ReviewPolicySerializer, **ERRORS})
    def put(self, request: Request, pk: int) -> Response:
        project = project_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(ReviewPolicySerializer)
        services.review_policy_update(project_id=project.pk, user=request.user, **{k: v for k, v in data.items() if k != "checklist"})
        return Response(_policy(project.pk))
