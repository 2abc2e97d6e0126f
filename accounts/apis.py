"""The accounts API: tokens and projects."""

from django.conf import settings
from django.contrib.auth import authenticate
from django.db.models import OuterRef, Subquery
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, parsers, serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import Membership, Project
from accounts.selectors import membership_get, project_list_for_user
from accounts.services import LOGIN_REFUSED_MESSAGE, api_token_issue, login_allowed, login_failure_record
from core.apis import ERRORS, ID_PARAMETER, ApiView, DetailSerializer, InvalidRequest, JSONParser
from core.throttles import client_address

# --- Token -----------------------------------------------------------------------------

class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False, style={"input_type": "password"}, write_only=True)


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class TokenObtainApi(ApiView):
    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = [JSONParser, parsers.FormParser, parsers.MultiPartParser]

    @extend_schema(
        operation_id="auth_token_obtain",
        summary="Exchange a username and password for an API token",
        description="Send the token as `Authorization: Token <token>`. The same token is returned until it is revoked.",
        request=TokenRequestSerializer,
        responses={
            200: TokenSerializer,
            400: OpenApiResponse(DetailSerializer, description="Wrong username or password."),
            429: OpenApiResponse(DetailSerializer, description="Too many failed attempts."),
        },
        auth=[],
    )
    def post(self, request: Request) -> Response:
        data = self.valid_data(TokenRequestSerializer)
        # The same limits as the sign-in page: failures at either door count against both.
        address = client_address(request)
        if not login_allowed(address=address, username=data["username"]):
            raise exceptions.Throttled(wait=settings.LOGIN_RATE_LIMIT[1], detail=LOGIN_REFUSED_MESSAGE)
        user = authenticate(request, username=data["username"], password=data["password"])
        if user is None:
            login_failure_record(address=address, username=data["username"])
            raise InvalidRequest("Unable to sign in with that username and password.")
        return Response({"token": api_token_issue(user=user)}, headers={"Cache-Control": "no-store"})


# --- Projects --------------------------------------------------------------------------

class ProjectSerializer(serializers.ModelSerializer):
    role = serializers.CharField(read_only=True, help_text="Your role in this project: author, reviewer or admin.")

    class Meta:
        model = Project
        fields = ["id", "name", "slug", "description", "role", "created_at"]
        read_only_fields = fields


class ProjectListApi(ApiView):
    list_filters = ()

    @extend_schema(summary="Your projects, with your role in each", responses=ProjectSerializer(many=True))
    def get(self, request: Request) -> Response:
        own_role = Membership.objects.filter(user=request.user, project=OuterRef("pk")).values("role")[:1]
        projects = project_list_for_user(user=request.user).annotate(role=Subquery(own_role)).order_by("name", "id")
        return self.paginated(projects, ProjectSerializer)


@extend_schema(parameters=[ID_PARAMETER])
class ProjectDetailApi(ApiView):
    @extend_schema(summary="One of your projects, with your role", responses={200: ProjectSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        membership = membership_get(user=request.user, project_id=pk)
        project = membership.project
        project.role = membership.role
        return Response(ProjectSerializer(project).data)
