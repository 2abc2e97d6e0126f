"""The model-call log through the API: staff see every call; a project admin sees the
calls of the projects they administer (`?project=` narrows to one; another project's id
gives an empty list, as on every list); anyone else gets 403, so that "no usage" is never
mistaken for "not allowed"."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import Role
from accounts.selectors import project_list_for_user
from core.apis import PROJECT_PARAMETER, ApiView, DetailSerializer
from llm.models import CallOutcome, CallPurpose
from llm.selectors import model_call_list


class ModelCallSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    endpoint = serializers.IntegerField(source="endpoint_id", allow_null=True)
    endpoint_name = serializers.CharField()
    project = serializers.IntegerField(source="project_id", allow_null=True)
    purpose = serializers.ChoiceField(choices=CallPurpose.choices)
    outcome = serializers.ChoiceField(choices=CallOutcome.choices)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=12, decimal_places=6, help_text="In dollars, at the endpoint's prices.")
    latency_ms = serializers.IntegerField()
    attempts = serializers.IntegerField()
    error = serializers.CharField()
    created_at = serializers.DateTimeField()



class ModelCallListApi(ApiView):
    list_filters = ("project",)

    @extend_schema(
        summary="The model-call log, newest first",
        description="Site admins see every call; a project admin sees the calls of the projects they administer "
        "(`project` narrows to one). Anyone else: 403.",
        parameters=[PROJECT_PARAMETER],
        responses={200: ModelCallSerializer(many=True), 403: OpenApiResponse(DetailSerializer, description="Not an admin.")},
    )
    def get(self, request: Request) -> Response:
        project_id = self.int_param("project")
        if request.user.is_staff:
            project_ids = None if project_id is None else [project_id]
        else:
            administered = project_list_for_user(user=request.user).filter(
                memberships__user=request.user, memberships__role=Role.ADMIN
            )
            project_ids = list(administered.values_list("pk", flat=True))
            if not project_ids:
                raise PermissionDenied("Only site admins and project admins see model usage.")
            if project_id is not None:
                project_ids = [pk for pk in project_ids if pk == project_id]
        return self.paginated(model_call_list(project_ids=project_ids), ModelCallSerializer)
