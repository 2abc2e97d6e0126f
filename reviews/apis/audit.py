"""The audit trail through the API, as on the pages: a task's timeline (oldest first) for the
members of its project, a project's (newest first) for its admins. Filters are allow-listed:
an unknown kind, a person outside the project or a malformed date is a 400."""

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from authoring.selectors import env_task_get_for_user
from core.apis import ERRORS, ID_PARAMETER, READ_ERRORS, ApiView
from reviews.selectors.audit import (
    KINDS,
    AuditFilters,
    audit_entries,
    audit_filters_clean,
    audit_project_get_for_user,
    audit_timeline,
)


class AuditEntrySerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    actor = serializers.CharField(allow_null=True, help_text="Username; null when Taskwright itself did it (a lapsed claim).")
    kind = serializers.CharField(help_text="What happened: " + ", ".join(KINDS) + ".")
    kind_label = serializers.CharField()
    summary = serializers.CharField()
    link = serializers.CharField(help_text="The page that shows it (a path), or empty.")
    submission = serializers.IntegerField(allow_null=True, help_text="The task version (submission number) it concerns.")
    where = serializers.CharField(help_text="The task's title, or the world's for a document version.")
    task = serializers.IntegerField(source="task_id", allow_null=True)


FILTER_PARAMETERS = [
    OpenApiParameter("kind", OpenApiTypes.STR, enum=list(KINDS), description="Only events of this kind."),
    OpenApiParameter("actor", OpenApiTypes.STR, description="Only what this member of the project did (username)."),
    OpenApiParameter("since", OpenApiTypes.DATE, description="From this day (YYYY-MM-DD, included)."),
    OpenApiParameter("until", OpenApiTypes.DATE, description="To this day (YYYY-MM-DD, included)."),
]


class _AuditApi(ApiView):
    list_filters = ("kind", "actor", "since", "until")
    list_cursor = False  # a union of several tables: paged by offset

    def timeline_page(self, timeline: QuerySet) -> Response:
        paginator = self.pagination_class()
        rows = paginator.paginate_queryset(timeline, self.request, view=self)
        return paginator.get_paginated_response(AuditEntrySerializer(audit_entries(rows), many=True).data)

    def filters(self, project_id: int) -> AuditFilters:
        return audit_filters_clean(project_id=project_id, **{name: self.request.query_params.get(name) for name in self.list_filters})


@extend_schema(parameters=[ID_PARAMETER])
class TaskAuditApi(_AuditApi):
    @extend_schema(
        summary="A task's audit trail",
        description="Every submission, claim, release, checklist answer, decision, adjudication, comment and probe explanation "
        "on the task, and every version of its rubric and of its world's documents, oldest first.",
        parameters=FILTER_PARAMETERS,
        responses={200: AuditEntrySerializer(many=True), **READ_ERRORS},
    )
    def get(self, request: Request, pk: int) -> Response:
        env_task = env_task_get_for_user(user=request.user, pk=pk)
        filters = self.filters(env_task.project_id)
        return self.timeline_page(audit_timeline(env_task=env_task, reader=request.user, **filters.as_kwargs()))


@extend_schema(parameters=[ID_PARAMETER])
class ProjectAuditApi(_AuditApi):
    @extend_schema(
        summary="A project's audit trail (admins)",
        description="Everything on the project's tasks and its review settings, newest first. Only the project's admins.",
        parameters=FILTER_PARAMETERS,
        responses={200: AuditEntrySerializer(many=True), **ERRORS},
    )
    def get(self, request: Request, pk: int) -> Response:
        audit_project_get_for_user(user=request.user, project_id=pk)  # 404 outside, 403 for non-admins
        timeline = audit_timeline(project_id=pk, newest_first=True, reader=request.user, **self.filters(pk).as_kwargs())
        return self.timeline_page(timeline)
