"""World export (a download) and import (an upload) in the APEX-Agents / Archipelago layout."""

from django.contrib import messages
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from accounts.selectors import membership_get
from authoring import selectors
from authoring.services import world_transfer
from core.exceptions import ApplicationError
from core.files import SANDBOX_CSP


@require_GET
def world_export(request: HttpRequest, pk: int) -> HttpResponse:
    """The world as a zip, downloaded as an attachment; a refusal (role, a document that
    does not render) comes back as a message on the world's page."""
    world = selectors.world_get_for_user(user=request.user, pk=pk)
    try:
        archive = world_transfer.world_export(world=world, user=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
        return redirect("world-editor", pk=world.pk)
    response = FileResponse(
        archive, as_attachment=True, filename=world_transfer.world_export_filename(world), content_type="application/zip"
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = SANDBOX_CSP
    return response


@require_POST
def world_import(request: HttpRequest, project_pk: int) -> HttpResponse:
    """A new world from an uploaded world zip; on success its editor opens."""
    membership_get(user=request.user, project_id=project_pk)  # 404 before reading any upload
    archive = request.FILES.get("archive")
    if archive is None:
        messages.error(request, "Choose a world zip to import.")
        return redirect("project-detail", pk=project_pk)
    try:
        world = world_transfer.world_import(
            project_id=project_pk, user=request.user, uploaded_file=archive, title=request.POST.get("title", "")
        )
    except ApplicationError as error:
        messages.error(request, error.message)
        return redirect("project-detail", pk=project_pk)
    count = world.documents.count()
    messages.success(request, f"Imported {world.title!r} with {count} document{'s' if count != 1 else ''}.")
    return redirect("world-editor", pk=world.pk)
