"""Worlds out and in as zips in the APEX-Agents / Archipelago layout, over the API (the
same services as the world editor's Export and Import buttons)."""

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import parsers, status
from rest_framework.request import Request
from rest_framework.response import Response

from authoring import selectors
from authoring.apis.worlds import WorldSerializer
from authoring.services import world_transfer
from core.apis import ERRORS, ID_PARAMETER, ApiView, FirstRendererNegotiation, InvalidRequest, parse_id


@extend_schema(parameters=[ID_PARAMETER])
class WorldExportApi(ApiView):
    content_negotiation_class = FirstRendererNegotiation

    @extend_schema(
        summary="Download the world as a zip in the APEX-Agents / Archipelago layout (authors and admins)",
        responses={(200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, description="The zip, as an attachment."), **ERRORS},
    )
    def get(self, request: Request, pk: int) -> FileResponse:
        world = selectors.world_get_for_user(user=request.user, pk=pk)
        archive = world_transfer.world_export(world=world, user=request.user)
        response = FileResponse(
            archive, as_attachment=True, filename=world_transfer.world_export_filename(world), content_type="application/zip"
        )
        response["X-Content-Type-Options"] = "nosniff"
        return response


class WorldImportApi(ApiView):
    parser_classes = [parsers.MultiPartParser]

    @extend_schema(
        summary="Import a world zip (APEX-Agents / Archipelago layout) as a new world of a project (authors and admins)",
        description="Multipart: `project`, `file` (the zip) and optionally `title`. Checked whole before anything is stored; "
        "a refusal stores nothing.",
        request={"multipart/form-data": {"type": "object", "properties": {
            "project": {"type": "integer"}, "file": {"type": "string", "format": "binary"}, "title": {"type": "string"}},
            "required": ["project", "file"]}},
        responses={201: WorldSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        project_id = parse_id(request.data.get("project"), name="project")
        uploaded = request.FILES.get("file")
        if uploaded is None:
            raise InvalidRequest("Send the world zip in the multipart field `file`.")
        world = world_transfer.world_import(project_id=project_id, user=request.user, uploaded_file=uploaded,
                                            title=str(request.data.get("title") or ""))
        return Response(WorldSerializer(selectors.world_get_for_user(user=request.user, pk=world.pk)).data, status=status.HTTP_201_CREATED)
