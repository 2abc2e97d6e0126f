"""DELETE on a task and on a world (the pages' rules: reviews.services.deletion). The detail
APIs are authoring's; their delete is here, where a task's history is known, so these
subclasses answer at /api/tasks/{id}/ and /api/worlds/{id}/."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from authoring.apis.tasks import EnvTaskDetailApi as AuthoringTaskDetailApi
from authoring.apis.worlds import WorldDetailApi as AuthoringWorldDetailApi
from authoring.selectors import env_task_get_for_user, world_get_for_user
from core.apis import ERRORS, ID_PARAMETER
from reviews import services


class EnvTaskDetailApi(AuthoringTaskDetailApi):
    @extend_schema(
        summary="Delete a task with no history",
        description="Deletes the task with its rubric versions, input files, trial batches and probe runs. Refused (400) while "
        "the task has a history in the audit trail (it went to review, or was commented on) or trials, grading or probes "
        "still run on it. Authors and admins only. The project's audit trail records the deletion.",
        parameters=[ID_PARAMETER],
        request=None,
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, pk: int) -> Response:
        services.env_task_delete(env_task=env_task_get_for_user(user=request.user, pk=pk), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorldDetailApi(AuthoringWorldDetailApi):
    @extend_schema(
        summary="Delete a world no task uses",
        description="Deletes the world with its documents and their versions, drafting runs, skeleton proposals and "
        "sandboxes. Refused (400) while a task uses it or drafting runs in it. Authors and admins only. The project's "
        "audit trail records the deletion.",
        parameters=[ID_PARAMETER],
        request=None,
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, pk: int) -> Response:
        services.world_delete(world=world_get_for_user(user=request.user, pk=pk), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
