"""The packs API: an admin's business. The selectors show packs only to a project's
admins (anyone else gets an empty list and 404s); pack_create checks the role."""

from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import parsers, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from core.apis import (
    ERRORS,
    ID_PARAMETER,
    PROJECT_PARAMETER,
    ApiView,
    Conflict,
    DetailSerializer,
    FirstRendererNegotiation,
    InvalidRequest,
    id_field,
    parse_id,
    text_field,
    username_field,
)
from packs import selectors, services
from packs.downloads import format_download_response
from packs.formats import FORMAT_CHOICES
from packs.models import Pack, PackStatus

MAX_SUBMISSIONS_PER_REQUEST = 10_000


class PackSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.IntegerField(source="project_id")
    name = serializers.CharField()
    version = serializers.IntegerField()
    status = serializers.ChoiceField(choices=PackStatus.choices)
    progress = serializers.IntegerField(help_text="Percent done while building.")
    submission_ids = serializers.SerializerMethodField()
    size_bytes = serializers.IntegerField()
    sha256 = serializers.CharField(help_text="Of the zip file, once ready.")
    formats = serializers.ListField(child=serializers.CharField(), help_text="The formats the pack is written in.")
    manifest = serializers.JSONField(help_text="What is inside: formats, counts, contents per format, the sha256 and size of every file.")
    format_downloads = serializers.SerializerMethodField(
        help_text="format → URL of a zip holding only that format (and the worlds it reads)."
    )
    error = serializers.CharField()
    download_url = serializers.SerializerMethodField()
    created_by = username_field("created_by")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_submission_ids(self, pack: Pack) -> list[int]:
        return sorted(submission.pk for submission in pack.submissions.all())

    def get_format_downloads(self, pack: Pack) -> dict[str, str]:
        if pack.status != PackStatus.READY:
            return {}
        contents = (pack.manifest or {}).get("contents") or {}
        return {key: reverse("api-pack-download-format", kwargs={"pk": pack.pk, "key": key}) for key in pack.formats if key in contents}

    def get_download_url(self, pack: Pack) -> str | None:
        if pack.status != PackStatus.READY:
            return None
        return reverse("api-pack-download", kwargs={"pk": pack.pk})


class PackCreateSerializer(serializers.Serializer):
    project = id_field()
    name = text_field()
    submission_ids = serializers.ListField(
        child=id_field(), max_length=MAX_SUBMISSIONS_PER_REQUEST, help_text="Approved submissions of the project."
    )
    formats = serializers.ListField(
        child=serializers.ChoiceField(choices=FORMAT_CHOICES), required=False, max_length=len(FORMAT_CHOICES),
        help_text="The formats to write; all of them when left out.",
    )


class PackListApi(ApiView):
    list_filters = ("project",)

    @extend_schema(
        summary="Packs of the projects you administer",
        parameters=[PROJECT_PARAMETER],
        responses=PackSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        packs = selectors.pack_list_for_user(user=request.user, project_id=self.int_param("project")).prefetch_related("submissions")
        return self.paginated(packs, PackSerializer)

    @extend_schema(
        summary="Build a new pack of approved submissions (admins)",
        description="Answers at once with the pack queued; poll it until its status is ready, then download it.",
        request=PackCreateSerializer,
        responses={201: PackSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = self.valid_data(PackCreateSerializer)
        pack = services.pack_create(project_id=data["project"], user=request.user, name=data["name"], submission_ids=data["submission_ids"],
                                    formats=data.get("formats"))
        return Response(PackSerializer(selectors.pack_get_for_user(user=request.user, pk=pack.pk)).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class PackDetailApi(ApiView):
    @extend_schema(summary="One pack", responses={200: PackSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(PackSerializer(selectors.pack_get_for_user(user=request.user, pk=pk)).data)


@extend_schema(parameters=[ID_PARAMETER])
class PackCancelApi(ApiView):
    @extend_schema(summary="Cancel a pack's build (admins): a queued pack never starts, a building one stops and keeps no file",
                   request=None, responses={200: PackSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        services.pack_cancel(pack=selectors.pack_get_for_user(user=request.user, pk=pk), user=request.user)
        return Response(PackSerializer(selectors.pack_get_for_user(user=request.user, pk=pk)).data)


@extend_schema(parameters=[ID_PARAMETER])
class PackDownloadApi(ApiView):
    content_negotiation_class = FirstRendererNegotiation

    @extend_schema(
        summary="Download the pack's zip",
        responses={
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, description="The zip, as an attachment."),
            404: ERRORS[404],
            409: OpenApiResponse(DetailSerializer, description="The pack is not ready yet (or failed)."),
        },
    )
    def get(self, request: Request, pk: int) -> FileResponse:
        pack = _ready_pack(request, pk)
        try:
            handle = pack.file.open("rb")
        except FileNotFoundError:
            raise Conflict("This pack's file is missing from storage; build a new version.") from None
        response = FileResponse(handle, as_attachment=True, filename=pack.filename, content_type="application/zip")
        response["X-Content-Type-Options"] = "nosniff"
        return response


class PackDiffSerializer(serializers.Serializer):
    previous = serializers.JSONField(allow_null=True, help_text="{id, version} of the version compared with; null for a first version.")
    added = serializers.JSONField()
    removed = serializers.JSONField()
    changed = serializers.JSONField(help_text="[{task_id, title, from_version, to_version, parts, documents: {added, removed, changed}}]")
    unchanged = serializers.IntegerField()
    formats = serializers.JSONField(help_text="{added, removed}: the format keys this version has that the previous had not, and back.")


@extend_schema(parameters=[ID_PARAMETER])
class PackVersionsApi(ApiView):
    list_filters = ()  # GET is a paginated list: it takes limit/offset (the schema said so; the view refused them)

    @extend_schema(summary="Every version of this pack's name, newest first", responses={200: PackSerializer(many=True), 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        pack = selectors.pack_get_for_user(user=request.user, pk=pk)
        return self.paginated(selectors.pack_versions(pack=pack).prefetch_related("submissions"), PackSerializer)

    @extend_schema(summary="Build the next version (same name and formats, every task at its newest approved version)",
                   request=None, responses={201: PackSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        again = services.pack_build_again(pack=selectors.pack_get_for_user(user=request.user, pk=pk), user=request.user)
        return Response(PackSerializer(selectors.pack_get_for_user(user=request.user, pk=again.pk)).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class PackDiffApi(ApiView):
    @extend_schema(summary="What changed since the previous built version of the same name",
                   responses={200: PackDiffSerializer, 404: ERRORS[404],
                              409: OpenApiResponse(DetailSerializer, description="Not built yet.")})
    def get(self, request: Request, pk: int) -> Response:
        pack = selectors.pack_get_for_user(user=request.user, pk=pk)
        if pack.status != PackStatus.READY:
            raise Conflict(f"This pack is {pack.get_status_display().lower()}: its changes are known once it is built.")
        previous = selectors.pack_previous_version(pack=pack)
        if previous is None:
            return Response({"previous": None, "added": [], "removed": [], "changed": [], "unchanged": 0,
                             "formats": {"added": [], "removed": []}})
        return Response(selectors.pack_diff(pack=pack, previous=previous))


def _ready_pack(request: Request, pk: int) -> Pack:
    pack = selectors.pack_get_for_user(user=request.user, pk=pk)
    if pack.status in (PackStatus.FAILED, PackStatus.CANCELLED):
        ended = "failed" if pack.status == PackStatus.FAILED else "was cancelled"
        raise Conflict(f"This pack's build {ended}, so there is nothing to download: {pack.error}")
    if pack.status != PackStatus.READY or not pack.file:
        raise Conflict(f"This pack is still {pack.get_status_display().lower()}: download it once it is ready.")
    return pack


@extend_schema(parameters=[ID_PARAMETER, OpenApiParameter("key", str, OpenApiParameter.PATH, enum=[k for k, _ in FORMAT_CHOICES])])
class PackFormatDownloadApi(ApiView):
    content_negotiation_class = FirstRendererNegotiation

    def initial(self, request: Request, *args, **kwargs) -> None:
        key = self.kwargs.pop("key")  # a format's name, not an id: kept out of ApiView's id parsing
        super().initial(request, *args, **kwargs)
        self.kwargs["key"] = key

    @extend_schema(
        summary="Download one format of the pack as a zip (with the worlds it reads, README and manifest)",
        operation_id="packs_download_format",
        responses={
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, description="The zip, as an attachment."),
            404: ERRORS[404],
            409: OpenApiResponse(DetailSerializer, description="The pack is not ready yet (or failed)."),
        },
    )
    def get(self, request: Request, pk: int, key: str) -> FileResponse:
        return format_download_response(_ready_pack(request, pk), key)


class PackImportResultSerializer(serializers.Serializer):
    task_ids = serializers.ListField(child=serializers.IntegerField())
    world_ids = serializers.ListField(child=serializers.IntegerField())


class PackImportApi(ApiView):
    parser_classes = [parsers.MultiPartParser]

    @extend_schema(
        summary="Import a Taskwright pack into a project (admins): its tasks become drafts on imported worlds",
        description="Multipart: `project` and `file` (the pack zip, built with Taskwright's own format). The whole pack is checked "
        "first (ours, complete, every sha256); a refusal imports nothing. The same pack imported into the same project again "
        "is refused unless `again` is true (a second copy of every world and task).",
        request={"multipart/form-data": {"type": "object", "properties": {"project": {"type": "integer"},
                                                                          "file": {"type": "string", "format": "binary"},
                                                                          "again": {"type": "boolean", "default": False}},
                                         "required": ["project", "file"]}},
        responses={201: PackImportResultSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        project_id = parse_id(request.data.get("project"), name="project")
        uploaded = request.FILES.get("file")
        if uploaded is None:
            raise InvalidRequest("Send the pack zip in the multipart field `file`.")
        again = str(request.data.get("again", "")).lower() in ("1", "true", "on", "yes")
        tasks = services.pack_import(project_id=project_id, user=request.user, uploaded_file=uploaded, again=again)
        return Response(
            {"task_ids": [t.pk for t in tasks], "world_ids": sorted({t.world_id for t in tasks})}, status=status.HTTP_201_CREATED
        )
