"""The QA API: submit a task, the review queue, claims and decisions. Thin: the services
enforce who may do what (an author never decides on their own submission)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from authoring.selectors import env_task_get_for_user
from core.apis import ERRORS, ID_PARAMETER, PROJECT_PARAMETER, ApiView, status_parameter, text_field, username_field
from reviews import selectors, services
from reviews.models import Decision, SubmissionStatus


class ReviewSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=Decision.choices)
    comment = serializers.CharField()
    reviewer = username_field("reviewer")
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
    created_at = serializers.DateTimeField()


class SubmissionDetailSerializer(SubmissionSerializer):
    snapshot = serializers.JSONField(help_text="The frozen task, rubric and world, exactly as submitted.")
    review = ReviewSerializer(allow_null=True, read_only=True, help_text="The reviewer's decision, once made.")


class DecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=Decision.choices)
    comment = text_field(required=False, default="", help_text="Required when requesting changes: the author reads it.")


def _detail(submission_id: int, user) -> dict:
    return SubmissionDetailSerializer(selectors.submission_get_for_user(user=user, pk=submission_id)).data


@extend_schema(parameters=[ID_PARAMETER])
class EnvTaskSubmitApi(ApiView):
    @extend_schema(
        summary="Submit the task for review",
        description="Freezes the task, its current rubric and its world into a new immutable version and queues it.",
        request=None,
        responses={201: SubmissionDetailSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        env_task = env_task_get_for_user(user=request.user, pk=pk)
        submission = services.submission_create(env_task=env_task, user=request.user)
        return Response(_detail(submission.pk, request.user), status=status.HTTP_201_CREATED)


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
        return Response(SubmissionDetailSerializer(selectors.submission_get_for_user(user=request.user, pk=pk)).data)


class ReviewQueueApi(ApiView):
    list_filters = ()

    @extend_schema(
        summary="Submissions waiting for a reviewer",
        description="In projects where you review, oldest first, never your own.",
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
        return Response(_detail(submission.pk, request.user))


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
        return Response(_detail(submission.pk, request.user))


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
        services.review_decide(submission=submission, user=request.user, decision=data["decision"], comment=data["comment"])
        return Response(_detail(submission.pk, request.user))
