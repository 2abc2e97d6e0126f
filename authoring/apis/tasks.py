"""Tasks and their rubrics through the API: tasks, the current rubric version, criteria."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from authoring import selectors, services
from authoring.apis.common import EDIT_ERRORS
from authoring.models import CriterionTag, DeliverableKind, EnvTask, EnvTaskStatus, GraderKind, RubricVersion
from core.apis import (
    ERRORS,
    ID_PARAMETER,
    PROJECT_PARAMETER,
    ApiView,
    RevisionedSerializer,
    id_field,
    status_parameter,
    text_field,
    username_field,
)

CRITERION_FIELDS = ("text", "points", "tag", "grader_kind", "grader_config", "explanation")


# --- Serializers -----------------------------------------------------------------------

class EnvTaskListSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.IntegerField(source="project_id")
    world = serializers.IntegerField(source="world_id")
    title = serializers.CharField()
    deliverable_kind = serializers.ChoiceField(choices=DeliverableKind.choices)
    status = serializers.ChoiceField(choices=EnvTaskStatus.choices)
    revision = serializers.IntegerField()
    created_by = username_field("created_by")
    updated_by = username_field("updated_by")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class EnvTaskSerializer(EnvTaskListSerializer):
    prompt = serializers.CharField()
    reference_answer = serializers.CharField()


class EnvTaskCreateSerializer(serializers.Serializer):
    world = id_field()
    title = text_field()
    prompt = text_field(required=False, default="")
    deliverable_kind = serializers.ChoiceField(choices=DeliverableKind.choices, default=DeliverableKind.ANSWER)
    reference_answer = text_field(required=False, default="")


class EnvTaskUpdateSerializer(RevisionedSerializer):
    title = text_field(required=False)
    prompt = text_field(required=False)
    deliverable_kind = serializers.ChoiceField(choices=DeliverableKind.choices, required=False)
    reference_answer = text_field(required=False)


class CriterionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField()
    text = serializers.CharField()
    points = serializers.IntegerField(help_text="Negative points make this a penalty.")
    tag = serializers.ChoiceField(choices=CriterionTag.choices)
    grader_kind = serializers.ChoiceField(choices=GraderKind.choices)
    grader_config = serializers.DictField()
    explanation = serializers.CharField()


class RubricSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="rubric.id")
    task = serializers.IntegerField(source="rubric.env_task_id")
    number = serializers.IntegerField(source="rubric.number", help_text="The rubric's version number.")
    revision = serializers.IntegerField(source="rubric.revision", help_text="Send it back as `revision` with your next criterion edit.")
    frozen = serializers.BooleanField(
        source="rubric.is_frozen", help_text="A frozen version never changes: the next edit starts a new version."
    )
    frozen_at = serializers.DateTimeField(source="rubric.frozen_at", allow_null=True)
    total_positive_points = serializers.IntegerField(source="positive_points")
    total_penalty_points = serializers.IntegerField(source="penalty_points")
    criteria = CriterionSerializer(many=True)


class CriterionCreateSerializer(RevisionedSerializer):
    text = text_field()
    points = serializers.IntegerField(default=1)
    tag = serializers.ChoiceField(choices=CriterionTag.choices, default=CriterionTag.IMPORTANT)
    grader_kind = serializers.ChoiceField(choices=GraderKind.choices, default=GraderKind.LLM_JUDGE)
    grader_config = serializers.DictField(required=False, default=dict)
    explanation = text_field(required=False, default="")


class CriterionUpdateSerializer(RevisionedSerializer):
    text = text_field(required=False)
    points = serializers.IntegerField(required=False)
    tag = serializers.ChoiceField(choices=CriterionTag.choices, required=False)
    grader_kind = serializers.ChoiceField(choices=GraderKind.choices, required=False)
    grader_config = serializers.DictField(required=False)
    explanation = text_field(required=False)


class CriterionWriteSerializer(serializers.Serializer):
    criterion = CriterionSerializer()
    rubric = RubricSerializer()


class RubricWriteSerializer(serializers.Serializer):
    rubric = RubricSerializer()


def _rubric_data(env_task: EnvTask) -> dict:
    rubric: RubricVersion | None = selectors.rubric_version_current(env_task=env_task)
    return RubricSerializer(selectors.rubric_summary(rubric_version=rubric)).data


def _fresh_rubric_data(env_task_id: int, user) -> dict:
    # Read back through the selector: an edit of a frozen version made a new one.
    return _rubric_data(selectors.env_task_get_for_user(user=user, pk=env_task_id))


# --- Tasks -----------------------------------------------------------------------------

class EnvTaskListApi(ApiView):
    list_filters = ("project", "status")

    @extend_schema(
        summary="Tasks of your projects",
        description="The prompt and reference answer are left out of the list: read one task for them.",
        parameters=[PROJECT_PARAMETER, status_parameter(EnvTaskStatus.values)],
        responses=EnvTaskListSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        env_tasks = selectors.env_task_rows_for_user(
            user=request.user, project_id=self.int_param("project"), status=self.choice_param("status", EnvTaskStatus.values),
            related=("created_by", "updated_by"),
        )
        return self.paginated(env_tasks, EnvTaskListSerializer)

    @extend_schema(summary="Create a task on a world", request=EnvTaskCreateSerializer, responses={201: EnvTaskSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = dict(self.valid_data(EnvTaskCreateSerializer))
        world = selectors.world_get_for_user(user=request.user, pk=data.pop("world"))
        env_task = services.env_task_create(world=world, user=request.user, **data)
        return Response(EnvTaskSerializer(env_task).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class EnvTaskDetailApi(ApiView):
    @extend_schema(summary="One task", responses={200: EnvTaskSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(EnvTaskSerializer(selectors.env_task_get_for_user(user=request.user, pk=pk)).data)

    @extend_schema(
        summary="Edit a task (draft or changes requested)",
        description="Send `revision` and any fields to change.",
        request=EnvTaskUpdateSerializer,
        responses={200: EnvTaskSerializer, **EDIT_ERRORS},
    )
    def patch(self, request: Request, pk: int) -> Response:
        env_task = selectors.env_task_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(EnvTaskUpdateSerializer)
        env_task = services.env_task_update(
            env_task=env_task,
            user=request.user,
            base_revision=data["revision"],
            title=data.get("title", env_task.title),
            prompt=data.get("prompt", env_task.prompt),
            deliverable_kind=data.get("deliverable_kind", env_task.deliverable_kind),
            reference_answer=data.get("reference_answer", env_task.reference_answer),
        )
        return Response(EnvTaskSerializer(env_task).data)


@extend_schema(parameters=[ID_PARAMETER])
class EnvTaskNewVersionApi(ApiView):
    @extend_schema(
        summary="Start a new version of an approved task",
        description="The task goes back to draft, to be edited and submitted as its next version. Its approved version stays "
        "approved: packs keep holding it until the next one is approved. Authors and admins; 400 unless the task is approved.",
        request=None,
        responses={200: EnvTaskSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        env_task = selectors.env_task_get_for_user(user=request.user, pk=pk)
        return Response(EnvTaskSerializer(services.env_task_start_new_version(env_task=env_task, user=request.user)).data)


# --- Rubric ----------------------------------------------------------------------------

@extend_schema(parameters=[ID_PARAMETER])
class RubricApi(ApiView):
    @extend_schema(summary="The task's current rubric version", responses={200: RubricSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(_rubric_data(selectors.env_task_get_for_user(user=request.user, pk=pk)))


@extend_schema(parameters=[ID_PARAMETER])
class CriterionListApi(ApiView):
    @extend_schema(
        summary="Add a criterion to the task's rubric",
        description="`revision` is the rubric's revision. A frozen rubric is copied to a new version first.",
        request=CriterionCreateSerializer,
        responses={201: CriterionWriteSerializer, **EDIT_ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        env_task = selectors.env_task_get_for_user(user=request.user, pk=pk)
        data = dict(self.valid_data(CriterionCreateSerializer))
        base_revision = data.pop("revision")
        criterion = services.criterion_add(env_task=env_task, user=request.user, base_revision=base_revision, **data)
        body = {"criterion": CriterionSerializer(criterion).data, "rubric": _fresh_rubric_data(env_task.pk, request.user)}
        return Response(body, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class CriterionDetailApi(ApiView):
    @extend_schema(
        summary="Edit a criterion",
        description="`revision` is the rubric's revision. Editing a frozen version makes a new one: the answer "
        "carries the criterion's id in that version.",
        request=CriterionUpdateSerializer,
        responses={200: CriterionWriteSerializer, **EDIT_ERRORS},
    )
    def patch(self, request: Request, pk: int) -> Response:
        criterion = selectors.criterion_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(CriterionUpdateSerializer)
        criterion = services.criterion_update(
            criterion=criterion,
            user=request.user,
            base_revision=data["revision"],
            **{name: data.get(name, getattr(criterion, name)) for name in CRITERION_FIELDS},
        )
        env_task_id = criterion.rubric_version.env_task_id
        return Response({"criterion": CriterionSerializer(criterion).data, "rubric": _fresh_rubric_data(env_task_id, request.user)})

    @extend_schema(
        summary="Remove a criterion",
        description="The body carries the rubric's `revision`. Answers with the rubric as it now is.",
        request=RevisionedSerializer,
        responses={200: RubricWriteSerializer, **EDIT_ERRORS},
    )
    def delete(self, request: Request, pk: int) -> Response:
        criterion = selectors.criterion_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(RevisionedSerializer)
        rubric = services.criterion_delete(criterion=criterion, user=request.user, base_revision=data["revision"])
        return Response({"rubric": _fresh_rubric_data(rubric.env_task_id, request.user)})
