"""A task's input files through the API: list, upload, download, remove (as the task
editor's "Input files" section does, through the same services)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import parsers, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from authoring import selectors
from authoring.models import DocumentFormat
from authoring.services.task_files import MAX_INPUT_FILES_PER_TASK, task_input_file_remove, task_input_files_add
from authoring.services.uploads import MAX_FILES_PER_UPLOAD, MAX_UPLOAD_BYTES
from core.apis import ERRORS, ID_PARAMETER, ApiView, DetailSerializer, FirstRendererNegotiation, InvalidRequest, username_field
from core.files import attachment_response


class TaskInputFileSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.IntegerField(source="env_task_id")
    path = serializers.CharField(help_text="Where the agent finds the file, laid over the world's files.")
    size = serializers.IntegerField(help_text="In bytes.")
    sha256 = serializers.CharField()
    format = serializers.ChoiceField(choices=DocumentFormat.choices, help_text="How the agent's tools read it.")
    created_by = username_field("created_by")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


UPLOAD_REQUEST = inline_serializer("TaskInputFileUploadRequest", fields={
    "files": serializers.ListField(child=serializers.FileField(), help_text="One or more files (multipart field `files`)."),
    "folder": serializers.CharField(required=False, help_text="The folder they go in, e.g. Inputs; empty: the top level."),
    "replace": serializers.BooleanField(required=False, default=False,
                                        help_text="A file at a path the task already has replaces it (else the upload is refused)."),
})


@extend_schema(parameters=[ID_PARAMETER])
class TaskInputFileListApi(ApiView):
    list_filters = ()
    parser_classes = [parsers.MultiPartParser]

    @extend_schema(summary="The task's input files, by path", responses=TaskInputFileSerializer(many=True))
    def get(self, request: Request, pk: int) -> Response:
        env_task = selectors.env_task_get_for_user(user=request.user, pk=pk)
        return self.paginated(selectors.task_input_file_list_for_user(user=request.user, env_task_id=env_task.pk),
                              TaskInputFileSerializer)

    @extend_schema(
        summary="Add input files to the task (draft or changes requested)",
        description=f"Multipart, field `files` (at most {MAX_FILES_PER_UPLOAD}, {MAX_UPLOAD_BYTES // (1024 * 1024)} MB each; "
        f"a task holds at most {MAX_INPUT_FILES_PER_TASK}), optional `folder`. Each lands at `folder`/<its name>. Its type is "
        "decided from its content (docx, xlsx, pptx, pdf, csv, md, txt) and its text extracted for the agent. All or nothing: "
        "when any file is refused (too big, unreadable, a path the task already has without `replace`), none is added.",
        request={"multipart/form-data": UPLOAD_REQUEST},
        responses={201: TaskInputFileSerializer(many=True), **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        env_task = selectors.env_task_get_for_user(user=request.user, pk=pk)
        files = request.FILES.getlist("files")
        if not files:
            raise InvalidRequest("Send one or more files in the multipart field `files`.")
        replace = serializers.BooleanField().run_validation(request.data.get("replace", False))  # (true/false/1/0/on/off; else a 400)
        added = task_input_files_add(env_task=env_task, user=request.user, uploaded_files=files, folder=request.data.get("folder", ""),
                                     replace=replace)
        return Response(TaskInputFileSerializer(added, many=True).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class TaskInputFileDetailApi(ApiView):
    @extend_schema(summary="One input file of a task", responses={200: TaskInputFileSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(TaskInputFileSerializer(selectors.task_input_file_get_for_user(user=request.user, pk=pk)).data)

    @extend_schema(
        summary="Remove an input file from the task (draft or changes requested)",
        description="Versions of the task already submitted keep it.",
        request=None,
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, pk: int) -> Response:
        task_input_file_remove(input_file=selectors.task_input_file_get_for_user(user=request.user, pk=pk), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(parameters=[ID_PARAMETER])
class TaskInputFileContentApi(ApiView):
    content_negotiation_class = FirstRendererNegotiation

    @extend_schema(
        summary="The bytes of a task's input file, as uploaded",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="The file, as an attachment."),
            404: OpenApiResponse(DetailSerializer, description="No such input file in your projects, or its bytes are missing."),
        },
    )
    def get(self, request: Request, pk: int):
        input_file = selectors.task_input_file_get_for_user(user=request.user, pk=pk)
        data, name = selectors.task_input_file_download(input_file=input_file)
        return attachment_response(data, filename=name, content_type="application/octet-stream")
