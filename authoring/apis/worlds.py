"""Worlds through the API: list, create, read, edit, and the consistency check."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from authoring import selectors, services
from authoring.apis.common import EDIT_ERRORS
from core.apis import ERRORS, ID_PARAMETER, PROJECT_PARAMETER, ApiView, RevisionedSerializer, id_field, text_field, username_field

# --- Serializers -----------------------------------------------------------------------

class FactSerializer(serializers.Serializer):
    key = text_field()
    value = text_field()


class WorldSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.IntegerField(source="project_id")
    title = serializers.CharField()
    outline = serializers.CharField()
    facts = FactSerializer(many=True)
    revision = serializers.IntegerField()
    created_by = username_field("created_by")
    updated_by = username_field("updated_by")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class WorldCreateSerializer(serializers.Serializer):
    project = id_field()
    title = text_field()
    outline = text_field(required=False, default="")
    facts = FactSerializer(many=True, required=False, default=list)


class WorldUpdateSerializer(RevisionedSerializer):
    title = text_field(required=False)
    outline = text_field(required=False)
    facts = FactSerializer(many=True, required=False)


class MismatchSerializer(serializers.Serializer):
    fact_key = serializers.CharField(help_text="The fact, as named in the facts sheet.")
    fact_value = serializers.CharField(help_text="Its value in the facts sheet.")
    document = serializers.IntegerField(source="document_id")
    document_path = serializers.CharField()
    found = serializers.CharField(source="found_value", help_text="The different value the document states, as written.")
    snippet = serializers.CharField(help_text="The sentence or table row of the document that states it.")
    kind = serializers.CharField(help_text="amount, date, percent, duration, jurisdiction or party.")
    reference_source = serializers.CharField(
        source="reference.evidence.source", help_text="Facts sheet, or the document the other value is from."
    )
    reference_passage = serializers.CharField(source="reference.evidence.passage", help_text="The passage that states the other value.")


class ConsistencyReportSerializer(serializers.Serializer):
    world = serializers.IntegerField()
    mismatches = MismatchSerializer(many=True)


# --- Views -----------------------------------------------------------------------------

class WorldListApi(ApiView):
    list_filters = ("project",)

    @extend_schema(summary="Worlds of your projects", parameters=[PROJECT_PARAMETER], responses=WorldSerializer(many=True))
    def get(self, request: Request) -> Response:
        worlds = selectors.world_list_for_user(user=request.user, project_id=self.int_param("project"))
        worlds = worlds.select_related("created_by", "updated_by")
        return self.paginated(worlds, WorldSerializer)

    @extend_schema(summary="Create a world (authors and admins)", request=WorldCreateSerializer, responses={201: WorldSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = self.valid_data(WorldCreateSerializer)
        world = services.world_create(
            project_id=data["project"], user=request.user, title=data["title"], outline=data["outline"], facts=data["facts"]
        )
        return Response(WorldSerializer(world).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class WorldDetailApi(ApiView):
    @extend_schema(summary="One world", responses={200: WorldSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(WorldSerializer(selectors.world_get_for_user(user=request.user, pk=pk)).data)

    @extend_schema(
        summary="Edit a world's title, outline or facts",
        description="Send `revision` (the one you read) and any fields to change.",
        request=WorldUpdateSerializer,
        responses={200: WorldSerializer, **EDIT_ERRORS},
    )
    def patch(self, request: Request, pk: int) -> Response:
        world = selectors.world_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(WorldUpdateSerializer)
        world = services.world_update(
            world=world,
            user=request.user,
            base_revision=data["revision"],
            title=data.get("title", world.title),
            outline=data.get("outline", world.outline),
            facts=data.get("facts", world.facts),
        )
        return Response(WorldSerializer(world).data)



@extend_schema(parameters=[ID_PARAMETER])
class WorldConsistencyApi(ApiView):
    @extend_schema(
        summary="Facts stated with different values across the data room",
        description="For each fact of the facts sheet, the documents that mention it with another value "
        "(an amount, a date, a party's name). A heuristic: it finds the contradictions that matter, it does not prove "
        "the room consistent.",
        responses={200: ConsistencyReportSerializer, 404: ERRORS[404]},
    )
    def get(self, request: Request, pk: int) -> Response:
        world = selectors.world_get_for_user(user=request.user, pk=pk)
        report = selectors.world_consistency_report(world=world)
        return Response(ConsistencyReportSerializer({"world": world.pk, "mismatches": report.findings}).data)
