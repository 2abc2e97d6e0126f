"""Your notifications through the API: the list (newest first) and marking read. Nobody
sees or marks another user's: another user's notification is a 404."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.apis import READ_ERRORS, ApiView, id_field
from reviews.selectors.notifications import notification_get_for_user, notification_list_for_user, notification_unread_count
from reviews.services import notifications_mark_read


class NotificationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.IntegerField(source="project_id", allow_null=True)
    text = serializers.CharField()
    url = serializers.CharField(help_text="The page it is about (a path), or empty.")
    created_at = serializers.DateTimeField()
    read_at = serializers.DateTimeField(allow_null=True)


class MarkReadSerializer(serializers.Serializer):
    id = id_field(required=False, help_text="The notification to mark read; leave out to mark all of yours read.")


class MarkedSerializer(serializers.Serializer):
    marked = serializers.IntegerField(help_text="How many notifications changed from unread to read.")
    unread = serializers.IntegerField(help_text="How many of yours are still unread.")


class NotificationListApi(ApiView):
    list_filters = ("unread",)

    @extend_schema(
        summary="Your notifications, newest first",
        parameters=[OpenApiParameter("unread", OpenApiTypes.STR, enum=["true", "false"], description="true: only unread ones.")],
        responses=NotificationSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        unread = self.choice_param("unread", ["true", "false"]) == "true"
        return self.paginated(notification_list_for_user(user=request.user, unread_only=unread), NotificationSerializer)


class NotificationReadApi(ApiView):
    @extend_schema(
        summary="Mark one notification, or all of yours, read",
        request=MarkReadSerializer,
        responses={200: MarkedSerializer, **READ_ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = self.valid_data(MarkReadSerializer)
        pk = notification_get_for_user(user=request.user, pk=data["id"]).pk if "id" in data else None
        marked = notifications_mark_read(user=request.user, pk=pk)
        return Response({"marked": marked, "unread": notification_unread_count(user=request.user)})
