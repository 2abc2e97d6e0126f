"""The QA comments API: a task's comment threads (filtered by anchor, open ones only), a new
comment on an anchor, a reply in a thread, resolve and reopen. Thin: the services check who
may do what and that the anchored object is the task's."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from authoring.selectors import env_task_get_for_user
from core.apis import ERRORS, ID_PARAMETER, READ_ERRORS, ApiView, id_field, text_field, username_field
from core.exceptions import ApplicationError
from reviews.models import CommentAnchor, ReviewComment, Submission
from reviews.selectors.comments import (
    CommentFilter,
    anchor_objects_for_task,
    comment_get_for_user,
    comment_threads_for_task,
)
from reviews.services import comments as services


class CommentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.IntegerField(source="env_task_id")
    submission = serializers.IntegerField(source="submission_id", allow_null=True, help_text="The version it was made on, if any.")
    thread = serializers.SerializerMethodField(help_text="The id of the thread's first comment (its own id for a first comment).")
    author = username_field("author")
    body = serializers.CharField(help_text="Markdown.")
    anchor = serializers.ChoiceField(choices=CommentAnchor.choices)
    criterion = serializers.IntegerField(source="criterion_id", allow_null=True)
    criterion_text = serializers.CharField(help_text="The criterion's words when the comment was made.")
    document = serializers.IntegerField(source="document_id", allow_null=True)
    document_path = serializers.CharField()
    quote = serializers.CharField(help_text="The passage of the document the comment is about.")
    step = serializers.IntegerField(source="step_id", allow_null=True)
    created_at = serializers.DateTimeField()

    def get_thread(self, comment: ReviewComment) -> int:
        return comment.parent_id or comment.pk


class ThreadSerializer(CommentSerializer):
    resolved_at = serializers.DateTimeField(allow_null=True)
    resolved_by = username_field("resolved_by")
    replies = CommentSerializer(many=True, source="replies.all")


class CommentCreateSerializer(serializers.Serializer):
    body = text_field(help_text="Markdown, at most 20,000 characters.")
    anchor = serializers.ChoiceField(choices=CommentAnchor.choices, default=CommentAnchor.TASK)
    criterion = id_field(required=False, help_text="With anchor=criterion: a criterion of any rubric version of the task.")
    document = id_field(required=False, help_text="With anchor=document: a document of the task's world.")
    quote = text_field(required=False, default="", help_text="With anchor=document: a passage of it (at most 2,000 characters).")
    step = id_field(required=False, help_text="With anchor=step: a step of one of the task's rollouts.")
    submission = id_field(required=False, help_text="The version of the task the comment is made on.")


class ReplySerializer(serializers.Serializer):
    body = text_field(help_text="Markdown, at most 20,000 characters.")


ANCHOR_PARAMETER = OpenApiParameter("anchor", OpenApiTypes.STR, enum=CommentAnchor.values,
                                    description="Only comments on this kind of place.")
OPEN_PARAMETER = OpenApiParameter("open", OpenApiTypes.BOOL, description="true: only threads nobody resolved yet.")


def _thread(comment: ReviewComment, user) -> dict:
    root = comment_threads_for_task(user=user, env_task=comment.env_task).get(pk=comment.parent_id or comment.pk)
    return ThreadSerializer(root).data


@extend_schema(parameters=[ID_PARAMETER])
class TaskCommentListApi(ApiView):
    list_filters = ("anchor", "open")

    @extend_schema(summary="The task's comment threads, oldest first",
                   description="Each thread is a first comment with its replies; resolving concerns the whole thread.",
                   parameters=[ANCHOR_PARAMETER, OPEN_PARAMETER], responses={200: ThreadSerializer(many=True), **READ_ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        env_task = env_task_get_for_user(user=request.user, pk=pk)
        anchor = self.choice_param("anchor", CommentAnchor.values)
        open_only = self.choice_param("open", ["true", "false", "1", "0"]) in ("true", "1")
        threads = comment_threads_for_task(user=request.user, env_task=env_task, where=CommentFilter(anchor=anchor, open_only=open_only))
        return self.paginated(threads, ThreadSerializer)

    @extend_schema(summary="Comment on the task, its prompt or reference answer, a criterion, a document or a step",
                   description="Any member of the project may comment. When a reviewer or an admin comments, the task's authors are told.",
                   request=CommentCreateSerializer, responses={201: ThreadSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        env_task = env_task_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(CommentCreateSerializer)
        found = anchor_objects_for_task(env_task=env_task, criterion_id=data.get("criterion"), document_id=data.get("document"),
                                        step_id=data.get("step"))
        for name in ("criterion", "document", "step"):
            if data.get(name) and found[name] is None:
                raise ApplicationError(f"There is no {name} {data[name]} in this task.")
        submission = None
        if data.get("submission"):
            submission = Submission.objects.filter(pk=data["submission"], env_task_id=env_task.pk).defer("snapshot").first()
            if submission is None:
                raise ApplicationError(f"There is no version {data['submission']} of this task.")
        comment = services.comment_add(env_task=env_task, user=request.user, body=data["body"], anchor=data["anchor"], quote=data["quote"],
                                       submission=submission, **{name: found[name] for name in ("criterion", "document", "step")})
        return Response(_thread(comment, request.user), status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class CommentReplyApi(ApiView):
    @extend_schema(summary="Reply in a comment's thread", description="The thread's participants are told.",
                   request=ReplySerializer, responses={201: ThreadSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        comment = comment_get_for_user(user=request.user, pk=pk)
        reply = services.comment_add(env_task=comment.env_task, user=request.user, body=self.valid_data(ReplySerializer)["body"],
                                     parent=comment)
        return Response(_thread(reply, request.user), status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class CommentResolveApi(ApiView):
    @extend_schema(summary="Resolve a comment's thread", description="For the task's authors, reviewers and admins. "
                   "Resolving a reply resolves its thread; a resolved thread stays resolved.",
                   request=None, responses={200: ThreadSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        comment = comment_get_for_user(user=request.user, pk=pk)
        services.comment_resolve(comment=comment, user=request.user)
        return Response(_thread(comment, request.user))


@extend_schema(parameters=[ID_PARAMETER])
class CommentReopenApi(ApiView):
    @extend_schema(summary="Reopen a resolved comment thread", request=None, responses={200: ThreadSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        comment = comment_get_for_user(user=request.user, pk=pk)
        services.comment_reopen(comment=comment, user=request.user)
        return Response(_thread(comment, request.user))
