"""The packs API: an admin's business. The selectors show packs only to a project's
admins (anyone else gets an empty list and 404s); pack_create checks the role."""

from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from core.apis import (
    ERRORS,
    ID_PARAMETER,
    PROJECT_PARAMETER,
    ApiView,
    Conflict,
    DetailSerializer,
    id_field,
    text_field,
    username_field,
)
from packs import selectors, services
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
    manifest = serializers.JSONField(help_text="What is inside, with the sha256 and size of every file.")
    error = serializers.CharField()
    download_url = serializers.SerializerMethodField()
    created_by = username_field("created_by")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_submission_ids(self, pack: Pack) -> list[int]:
        return sorted(submission.pk for submission in pack.submissions.all())

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
        pack = services.pack_create(project_id=data["project"], user=request.user, name=data["name"], submission_ids=data["submission_ids"])
        return Response(PackSerializer(selectors.pack_get_for_user(user=request.user, pk=pack.pk)).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class PackDetailApi(ApiView):
    @extend_schema(summary="One pack", responses={200: PackSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(PackSerializer(selectors.pack_get_for_user(user=request.user, pk=pk)).data)


class FirstRendererNegotiation(BaseContentNegotiation):
    """The download answers a zip whatever the client accepts; its errors are JSON."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


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
        pack = selectors.pack_get_for_user(user=request.user, pk=pk)
        if pack.status == PackStatus.FAILED:
            raise Conflict(f"This pack's build failed, so there is nothing to download: {pack.error}")
        if pack.status != PackStatus.READY or not pack.file:
            raise Conflict(f"This pack is still {pack.get_status_display().lower()}: download it once it is ready.")
        try:
            handle = pack.file.open("rb")
        except FileNotFoundError:
            raise Conflict("This pack's file is missing from storage; build a new version.") from None
        response = FileResponse(handle, as_attachment=True, filename=pack.filename, content_type="application/zip")
        response["X-Content-Type-Options"] = "nosniff"
        return response
