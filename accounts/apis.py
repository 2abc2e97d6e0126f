"""The accounts API: tokens, projects and their members."""

from django.conf import settings
from django.contrib.auth import authenticate
from django.db.models import OuterRef, Subquery
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, parsers, serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import Membership, Project, Role
from accounts.selectors import member_get_for_admin, membership_get, project_admin_get, project_list_for_user, project_members
from accounts.services import (
    LOGIN_REFUSED_MESSAGE,
    api_token_issue,
    login_allowed,
    login_failure_record,
    member_add,
    member_remove,
    member_role_change,
)
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
        description=("Send the token as `Authorization: Token <token>` (or `Bearer <token>`). "
                     "The same token is returned until it is revoked."),
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


# --- Members (a project's admins) ----------------------------------------------------------

class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    email = serializers.CharField(source="user.email", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "project", "username", "email", "role", "created_at"]
        read_only_fields = fields


class MemberAddSerializer(serializers.Serializer):
    identifier = serializers.CharField(max_length=254, help_text="The user name or email of an existing account.")
    role = serializers.ChoiceField(choices=Role.choices)


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


@extend_schema(parameters=[ID_PARAMETER])
class ProjectMembersApi(ApiView):
    list_filters = ()
    list_cursor = False  # ordered by role, then name: pages by offset

    @extend_schema(summary="The project's members and their roles (admins)", responses={200: MemberSerializer(many=True), 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        project_admin_get(user=request.user, project_id=pk)
        return self.paginated(project_members(project_id=pk), MemberSerializer)

    @extend_schema(summary="Add an existing account to the project with a role (admins)", request=MemberAddSerializer,
                   responses={201: MemberSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        project = project_admin_get(user=request.user, project_id=pk).project
        data = self.valid_data(MemberAddSerializer)
        membership = member_add(project=project, by=request.user, identifier=data["identifier"], role=data["role"])
        return Response(MemberSerializer(membership).data, status=201)


@extend_schema(parameters=[ID_PARAMETER])
class MemberDetailApi(ApiView):
    @extend_schema(summary="Change a member's role (admins; a project keeps one admin)", request=MemberRoleSerializer,
                   responses={200: MemberSerializer, **ERRORS})
    def patch(self, request: Request, pk: int) -> Response:
        membership = member_get_for_admin(user=request.user, pk=pk)
        data = self.valid_data(MemberRoleSerializer)
        return Response(MemberSerializer(member_role_change(membership=membership, by=request.user, role=data["role"])).data)

    @extend_schema(summary="Remove a member from the project (admins; their work stays)", request=None,
                   responses={204: None, **ERRORS})
    def delete(self, request: Request, pk: int) -> Response:
        member_remove(membership=member_get_for_admin(user=request.user, pk=pk), by=request.user)
        return Response(status=204)
