"""Trial runs through the API: start a batch of rollouts, follow its progress, read the
rollouts and their steps, cancel, comment on a step. The same services and selectors as
the pages: rollouts are queued after commit on the `rollouts` queue, so a start answers
202 and the client polls the batch until `progress.is_finished`."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from authoring.selectors import env_task_get_for_user
from core.apis import ERRORS, ID_PARAMETER, READ_ERRORS, ApiView, id_field, status_parameter, text_field, username_field
from llm.apis import usable_endpoint
from rollouts import selectors, services
from rollouts.models import DEFAULT_SYSTEM_PROMPT, BatchMode, Rollout, RolloutBatch, RolloutStatus
from rollouts.services import LIMITS
from workspace.selectors import overlay_diff

# --- Serializers -----------------------------------------------------------------------


def _bounded(name: str, default: int, help_text: str) -> serializers.IntegerField:
    low, high = LIMITS[name]
    return serializers.IntegerField(min_value=low, max_value=high, default=default, help_text=help_text)


class BatchStartSerializer(serializers.Serializer):
    endpoint = id_field(help_text="The model endpoint the agent runs on: an enabled one from GET /api/model-endpoints/.")
    n = _bounded("n", 8, "How many rollouts (independent attempts at the task).")
    mode = serializers.ChoiceField(
        choices=BatchMode.choices, default=BatchMode.TOOLS, help_text="`no_tools`: a baseline that answers from the prompt alone."
    )
    temperature = serializers.FloatField(
        min_value=0, max_value=2, required=False, allow_null=True, default=None, help_text="Left out or null: the model's default."
    )
    max_steps = _bounded("max_steps", 20, "Model steps per rollout before it stops without a final answer.")
    max_output_tokens = _bounded("max_output_tokens", 4096, "Output tokens per model step.")
    time_limit_seconds = _bounded("time_limit_seconds", 600, "Wall-clock limit per rollout.")
    system_prompt = text_field(
        required=False, default=DEFAULT_SYSTEM_PROMPT, help_text="The agent's standing instructions; the task's prompt follows."
    )


class BatchProgressSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    completed = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    finished = serializers.IntegerField(help_text="Completed, failed or cancelled.")
    percent = serializers.IntegerField(help_text="Finished rollouts, in percent.")
    is_finished = serializers.BooleanField(help_text="Every rollout has ended: stop polling.")
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=14, decimal_places=6, help_text="In dollars, at the endpoint's prices.")


class BatchSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.IntegerField(source="env_task_id")
    project = serializers.IntegerField(source="project_id")
    rubric_version = serializers.IntegerField(source="rubric_version_id", help_text="The frozen rubric version the batch ran against.")
    rubric_version_number = serializers.IntegerField(source="rubric_version.number")
    task_snapshot = serializers.DictField(
        help_text="The task as it was when the batch started: title, prompt, deliverable_kind, revision, "
        "input_files ({path, size, sha256} each)."
    )
    endpoint = serializers.IntegerField(source="endpoint_id", allow_null=True)
    endpoint_name = serializers.CharField()
    endpoint_is_scripted = serializers.BooleanField(source="endpoint_scripted", help_text="The scripted sample model, not a real one.")
    mode = serializers.ChoiceField(choices=BatchMode.choices)
    n = serializers.IntegerField()
    temperature = serializers.FloatField(allow_null=True)
    max_steps = serializers.IntegerField()
    max_output_tokens = serializers.IntegerField()
    time_limit_seconds = serializers.IntegerField()
    system_prompt = serializers.CharField()
    created_by = username_field("created_by")
    created_at = serializers.DateTimeField()
    cancelled_at = serializers.DateTimeField(allow_null=True)
    progress = BatchProgressSerializer()


class RolloutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    batch = serializers.IntegerField(source="batch_id")
    number = serializers.IntegerField(help_text="Its number in the batch, from 1 (\"Rollout 3\").")
    status = serializers.CharField(help_text="queued, running, completed, failed or cancelled.")
    reason = serializers.CharField(help_text="Why it ended the way it did.")
    final_answer = serializers.CharField()
    step_count = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=12, decimal_places=6)
    attempts = serializers.IntegerField(help_text="Deliveries to a worker (more than 1: resumed after a worker stopped).")
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class StepCommentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    step = serializers.IntegerField(source="step_id")
    author = username_field("author")
    text = serializers.CharField()
    created_at = serializers.DateTimeField()


class StepSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    index = serializers.IntegerField(help_text="From 0; the pages number steps from 1.")
    kind = serializers.CharField(help_text="model (a model message) or tool (a tool call and its result).")
    text = serializers.CharField(help_text="The model's text, or the tool's result.")
    tool_calls = serializers.ListField(child=serializers.DictField(), help_text="Model step: [{id, name, arguments, raw_arguments}].")
    tool_call_id = serializers.CharField()
    tool_name = serializers.CharField()
    arguments = serializers.JSONField(allow_null=True, help_text="Tool step: the arguments it ran with ({\"raw\": …} when not valid JSON).")
    is_error = serializers.BooleanField(help_text="Tool step: the tool refused or failed; the error went back to the model.")
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=12, decimal_places=6)
    latency_ms = serializers.IntegerField()
    finish_reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    comments = StepCommentSerializer(many=True, source="comments.all")


class FileChangeSerializer(serializers.Serializer):
    path = serializers.CharField()
    kind = serializers.CharField()
    action = serializers.CharField(help_text="added, modified or deleted.")
    diff = serializers.CharField(help_text="Unified diff of the world's item against the rollout's overlay.")


class RolloutDetailSerializer(RolloutSerializer):
    steps = StepSerializer(many=True, source="steps_list")
    file_changes = FileChangeSerializer(many=True, help_text="What the agent wrote, in its own scratch overlay (the world is unchanged).")


class StepCommentCreateSerializer(serializers.Serializer):
    text = text_field(help_text="Markdown; at most 10,000 characters.")


def _batch_data(batch: RolloutBatch) -> dict:
    progress = selectors.batch_progress(batch=batch)
    for name in ("input_tokens", "output_tokens", "cost"):
        progress[name] = progress[name] or 0  # a sum over no rows is None
    batch.progress = progress
    return BatchSerializer(batch).data


def _numbered(rollout: Rollout) -> Rollout:
    rollout.number = rollout.index + 1
    return rollout


# --- Batches ---------------------------------------------------------------------------

@extend_schema(parameters=[ID_PARAMETER])
class TaskBatchListApi(ApiView):
    list_filters = ()

    @extend_schema(summary="Trial batches of a task, newest first", responses={200: BatchSerializer(many=True), 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        env_task = env_task_get_for_user(user=request.user, pk=pk)
        batches = selectors.batch_list_for_task(user=request.user, env_task=env_task).select_related("created_by")
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(batches, request, view=self)
        return paginator.get_paginated_response([_batch_data(b) for b in page])

    @extend_schema(
        summary="Run trials: start a batch of rollouts",
        description="Freezes the task and its current rubric version, then queues one rollout per attempt on the `rollouts` "
        "queue. Poll GET /api/batches/{id}/ until `progress.is_finished`. Authors and admins only.",
        request=BatchStartSerializer,
        responses={202: BatchSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        env_task = env_task_get_for_user(user=request.user, pk=pk)
        data = dict(self.valid_data(BatchStartSerializer))
        endpoint = usable_endpoint(data.pop("endpoint"))
        batch = services.rollout_batch_start(env_task=env_task, user=request.user, endpoint=endpoint, **data)
        return Response(_batch_data(selectors.batch_get_for_user(user=request.user, pk=batch.pk)), status=status.HTTP_202_ACCEPTED)


@extend_schema(parameters=[ID_PARAMETER])
class BatchDetailApi(ApiView):
    @extend_schema(
        summary="A trial batch: its settings, what it ran against, and its progress", responses={200: BatchSerializer, 404: ERRORS[404]}
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(_batch_data(selectors.batch_get_for_user(user=request.user, pk=pk)))


@extend_schema(parameters=[ID_PARAMETER])
class BatchRolloutListApi(ApiView):
    list_filters = ("status",)

    @extend_schema(
        summary="The rollouts of a batch, in order",
        parameters=[status_parameter(RolloutStatus.values)],
        responses={200: RolloutSerializer(many=True), **READ_ERRORS},
    )
    def get(self, request: Request, pk: int) -> Response:
        batch = selectors.batch_get_for_user(user=request.user, pk=pk)
        rollouts = selectors.batch_rollouts(batch=batch)
        wanted = self.choice_param("status", RolloutStatus.values)
        if wanted:
            rollouts = rollouts.filter(status=wanted)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rollouts, request, view=self)
        return paginator.get_paginated_response(RolloutSerializer([_numbered(r) for r in page], many=True).data)


@extend_schema(parameters=[ID_PARAMETER])
class BatchCancelApi(ApiView):
    @extend_schema(
        summary="Cancel a batch",
        description="Queued rollouts never start; running ones stop before their next step. Finished ones keep their result.",
        request=None,
        responses={200: BatchSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        batch = selectors.batch_get_for_user(user=request.user, pk=pk)
        services.rollout_batch_cancel(batch=batch, user=request.user)
        return Response(_batch_data(selectors.batch_get_for_user(user=request.user, pk=pk)))


# --- Rollouts and steps ----------------------------------------------------------------

@extend_schema(parameters=[ID_PARAMETER])
class RolloutDetailApi(ApiView):
    @extend_schema(
        summary="A rollout with every step (and the comments on it) and the files it changed",
        responses={200: RolloutDetailSerializer, 404: ERRORS[404]},
    )
    def get(self, request: Request, pk: int) -> Response:
        rollout = _numbered(selectors.rollout_get_for_user(user=request.user, pk=pk))
        rollout.steps_list = list(selectors.rollout_steps(rollout=rollout))
        rollout.step_count = len(rollout.steps_list)
        rollout.file_changes = overlay_diff(overlay=rollout.overlay, env_task_id=rollout.batch.env_task_id) if rollout.overlay_id else []
        return Response(RolloutDetailSerializer(rollout).data)


@extend_schema(parameters=[ID_PARAMETER])
class StepCommentListApi(ApiView):
    list_filters = ()

    @extend_schema(summary="Comments on a step, oldest first", responses={200: StepCommentSerializer(many=True), 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        step = selectors.step_get_for_user(user=request.user, pk=pk)
        return self.paginated(step.comments.select_related("author").order_by("created_at", "id"), StepCommentSerializer)

    @extend_schema(
        summary="Comment on a step",
        description="Authors, reviewers and admins of the project may comment.",
        request=StepCommentCreateSerializer,
        responses={201: StepCommentSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        step = selectors.step_get_for_user(user=request.user, pk=pk)
        comment = services.step_comment_add(step=step, user=request.user, text=self.valid_data(StepCommentCreateSerializer)["text"])
        return Response(StepCommentSerializer(comment).data, status=status.HTTP_201_CREATED)
