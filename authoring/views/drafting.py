"""Pages and fragments for model-assisted drafting, versions, files and the consistency check."""

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import TooManyFilesSent
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from accounts.selectors import membership_for
from authoring import selectors
from authoring.forms import DocumentSkeletonForm
from authoring.models import World
from authoring.services import document_version_restore as restore_version
from authoring.services import drafting
from authoring.services.skeletons import proposal_open_items
from core.exceptions import ApplicationError
from core.files import attachment_response
from core.views import render_with_error
from llm.selectors import endpoint_get_usable, endpoint_picker

WORLD = "authoring/world_editor.html"
DOCUMENT = "authoring/document_editor.html"


def drafting_context(world: World) -> dict:
    """What the world editor's drafting panel needs (also used by the editor view)."""
    run = selectors.draft_run_latest(world=world)
    proposal = selectors.skeleton_proposal_latest(world=world)
    return {
        "endpoints": endpoint_picker(project_id=world.project_id),
        "run": run,
        "progress": drafting.draft_run_progress(run=run) if run else None,
        "failed_jobs": run.jobs.filter(status="failed").select_related("document") if run else [],
        "proposal": proposal,
        "proposal_has_open_items": proposal_open_items(proposal) > 0,
        "skeleton_new_form": DocumentSkeletonForm(auto_id="skeleton-new-%s"),  # the proposal's "Add your own item"
    }


def _endpoint_from(request: HttpRequest):
    raw = request.POST.get("endpoint", "")
    if not raw.isdigit():
        raise ApplicationError("Choose a model endpoint.")
    return endpoint_get_usable(pk=int(raw))


def _panel(request: HttpRequest, world: World, partial: str, error: ApplicationError | None = None, trigger: str = "",
           refresh_when_finished: bool = False) -> HttpResponse:
    if not request.htmx:
        return redirect("world-editor", pk=world.pk)
    context = {
        "world": world,
        "can_author": True,
        **drafting_context(world),
        f"{partial.replace('-', '_')}_error": error.message if error else None,
    }
    if refresh_when_finished and context["progress"] and context["progress"]["is_finished"]:
        # Decided on the progress this answer shows: the panel stops polling exactly when it
        # shows the run finished, so that same answer must tell the data room to refresh
        # (deciding on an earlier read, a run that finished in between left the tree stale).
        trigger = "data-room-changed"
    response = render_with_error(request, f"{WORLD}#{partial}", context, error)
    if trigger:
        response["HX-Trigger"] = trigger
    return response


@require_POST
def world_suggest_skeleton(request: HttpRequest, pk: int) -> HttpResponse:
    world = selectors.world_get_for_user(user=request.user, pk=pk)
    try:
        drafting.skeleton_suggest(world=world, user=request.user, endpoint=_endpoint_from(request))
    except ApplicationError as error:
        return _panel(request, world, "skeleton-proposal", error)
    return _panel(request, world, "skeleton-proposal")


@require_GET
def skeleton_proposal(request: HttpRequest, pk: int) -> HttpResponse:
    proposal = selectors.skeleton_proposal_get_for_user(user=request.user, pk=pk)
    return _panel(request, proposal.world, "skeleton-proposal")


@require_POST
def skeleton_accept(request: HttpRequest, pk: int) -> HttpResponse:
    proposal = selectors.skeleton_proposal_get_for_user(user=request.user, pk=pk)
    index = request.POST.get("index", "")
    try:
        indexes = None if index == "all" else [int(index)] if index.isdigit() else None
        if indexes is None and index != "all":
            raise ApplicationError("Choose an item to accept, or accept all.")
        drafting.skeleton_accept(proposal=proposal, user=request.user, indexes=indexes)
    except ApplicationError as error:
        return _panel(request, proposal.world, "skeleton-proposal", error)
    return _panel(request, proposal.world, "skeleton-proposal", trigger="data-room-changed")


@require_POST
def world_draft_all(request: HttpRequest, pk: int) -> HttpResponse:
    world = selectors.world_get_for_user(user=request.user, pk=pk)
    try:
        drafting.draft_run_start(world=world, user=request.user, endpoint=_endpoint_from(request))
    except ApplicationError as error:
        return _panel(request, world, "draft-progress", error)
    return _panel(request, world, "draft-progress")


@require_GET
def draft_run_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled every 2 s while the run has work left; the last answer tells the data room to refresh."""
    run = selectors.draft_run_get_for_user(user=request.user, pk=pk)
    return _panel(request, run.world, "draft-progress", refresh_when_finished=True)


@require_POST
def draft_run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """The world editor's Cancel (its drafting panel comes back), or with ?document=<pk> the
    document editor's (that document's drafting section comes back)."""
    run = selectors.draft_run_get_for_user(user=request.user, pk=pk)
    document_pk = request.GET.get("document", "")
    document = selectors.document_get_for_user(user=request.user, pk=int(document_pk)) if document_pk.isdigit() else None
    try:
        drafting.draft_run_cancel(run=run, user=request.user)
    except ApplicationError as error:
        if document is not None:
            return _document_drafting(request, document, run, error)
        return _panel(request, run.world, "draft-progress", error)
    if document is not None:
        return _document_drafting(request, document, run)
    return _panel(request, run.world, "draft-progress", trigger="data-room-changed")


def _document_drafting(request: HttpRequest, document, run, error: ApplicationError | None = None) -> HttpResponse:
    if not request.htmx:
        return redirect("document-editor", pk=document.pk)
    context = {"document": document, "run": run, "progress": drafting.draft_run_progress(run=run),
               "job": run.jobs.filter(document=document).first(), "endpoints": endpoint_picker(project_id=document.world.project_id),
               "drafting_error": error.message if error else None}
    return render_with_error(request, f"{DOCUMENT}#document-drafting", context, error)


@require_POST
def draft_job_retry(request: HttpRequest, pk: int) -> HttpResponse:
    job = selectors.draft_job_get_for_user(user=request.user, pk=pk)
    try:
        drafting.draft_job_retry(job=job, user=request.user)
    except ApplicationError as error:
        return _panel(request, job.run.world, "draft-progress", error)
    return _panel(request, job.run.world, "draft-progress", trigger="data-room-changed")  # its row says Drafting…


@require_POST
def document_draft(request: HttpRequest, pk: int) -> HttpResponse:
    """Draft (or redraft with an instruction) one document; the page follows the job."""
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    try:
        run = drafting.draft_run_start(
            world=document.world, user=request.user, endpoint=_endpoint_from(request), documents=[document],
            instruction=request.POST.get("instruction", "").strip(),
        )
    except ApplicationError as error:
        return render_with_error(
            request,
            f"{DOCUMENT}#document-drafting",
            {"document": document, "drafting_error": error.message, "endpoints": endpoint_picker(project_id=document.world.project_id)},
            error,
        )
    return render(
        request,
        f"{DOCUMENT}#document-drafting",
        {"document": document, "run": run, "progress": drafting.draft_run_progress(run=run),
         "endpoints": endpoint_picker(project_id=document.world.project_id)},
    )


@require_GET
def document_draft_status(request: HttpRequest, pk: int, run_pk: int) -> HttpResponse:
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    run = selectors.draft_run_get_for_user(user=request.user, pk=run_pk)
    progress = drafting.draft_run_progress(run=run)
    job = run.jobs.filter(document=document).first()
    response = render(
        request,
        f"{DOCUMENT}#document-drafting",
        {"document": document, "run": run, "progress": progress, "job": job,
         "endpoints": endpoint_picker(project_id=document.world.project_id)},
    )
    if progress["is_finished"] and job is not None and job.status == "done":
        response["HX-Refresh"] = "true"  # show the new content in the editor
    return response


@require_GET
def document_versions(request: HttpRequest, pk: int) -> HttpResponse:
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    versions = list(document.versions.select_related("created_by"))
    chosen = request.GET.get("v", "")
    shown = next((v for v in versions if str(v.number) == chosen), versions[0] if versions else None)
    membership = membership_for(user=request.user, project_id=document.world.project_id)
    return render(request, "authoring/document_versions.html", {
        "document": document, "world": document.world, "project": document.world.project, "versions": versions,
        "shown": shown, "can_author": membership.can_author,
    })


@require_POST
def document_version_restore(request: HttpRequest, pk: int) -> HttpResponse:
    version = selectors.document_version_get_for_user(user=request.user, pk=pk)
    revision = request.POST.get("revision", "")
    try:
        restore_version(version=version, user=request.user, base_revision=int(revision) if revision.isdigit() else None)
    except ApplicationError as error:
        messages.error(request, error.message)
        return redirect(f"/documents/{version.document_id}/versions/?v={version.number}")
    return redirect("document-editor", pk=version.document_id)


@require_GET
def document_download(request: HttpRequest, pk: int) -> HttpResponse:
    """The document rendered as its real file (docx, xlsx, pptx, pdf, eml, ics …)."""
    from authoring.rendering import render_file

    document = selectors.document_get_for_user(user=request.user, pk=pk)
    try:
        rendered = render_file(document.kind, document.format, document.content, document.metadata, path=document.path)
    except ApplicationError as error:
        return render_with_error(request, "authoring/render_error.html", {"document": document, "error": error.message}, error)
    return attachment_response(rendered.data, filename=rendered.filename, content_type=rendered.content_type)


@require_GET
def document_source_download(request: HttpRequest, pk: int) -> HttpResponse:
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    if not document.source_file:
        return redirect("document-editor", pk=document.pk)
    try:
        with document.source_file.open("rb") as handle:
            data = handle.read()
    except FileNotFoundError:  # removed from the store behind our back: say so, as the API does
        raise Http404("This document's original file is missing from storage.") from None
    return attachment_response(data, filename=document.source_name or document.name, content_type="application/octet-stream")


@require_GET
def world_consistency(request: HttpRequest, pk: int) -> HttpResponse:
    world = selectors.world_get_for_user(user=request.user, pk=pk)
    return render(
        request, f"{WORLD}#consistency", {"world": world, "report": selectors.world_consistency_report(world=world), "checked": True}
    )


@require_POST
def world_upload(request: HttpRequest, pk: int) -> HttpResponse:
    """Upload existing files into the data room, all or nothing; their text is extracted for
    agents. htmx gets the upload's report (what was kept, what was not and why) and the data
    room refreshes; a plain form POST is redirected with the report as messages."""
    from authoring.services.uploads import UploadRefused, documents_upload

    world = selectors.world_get_for_user(user=request.user, pk=pk)
    try:
        files = request.FILES.getlist("files")
        report = documents_upload(world=world, user=request.user, uploaded_files=files)
    except TooManyFilesSent:
        return _upload_refused(request, world, ApplicationError(f"Upload at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files at a time."))
    except ApplicationError as error:
        return _upload_refused(request, world, error, error.files if isinstance(error, UploadRefused) else [])
    if request.htmx:
        response = render(request, f"{WORLD}#upload-report", {"world": world, "upload_report": report})
        response["HX-Trigger"] = "data-room-changed"
        return response
    added = report.documents
    messages.success(request, f"Added {len(added)} document{'s' if len(added) != 1 else ''}: "
                              f"{', '.join(d.path for d in added[:20])}{f' and {len(added) - 20} more' if len(added) > 20 else ''}.")
    for outcome in report.files:
        for left in outcome.left:
            messages.warning(request, f"Not kept from {outcome.name}: {left.item}: {left.reason}")
    return redirect("world-editor", pk=world.pk)


def _upload_refused(request: HttpRequest, world: World, error: ApplicationError, files: list[dict] | None = None) -> HttpResponse:
    if request.htmx:
        context = {"world": world, "upload_error": error.message, "upload_refused": files or []}
        return render_with_error(request, f"{WORLD}#upload-report", context, error)
    messages.error(request, error.message)
    for problem in files or []:
        messages.error(request, f"{problem['name']}: {problem['detail']}")
    return redirect("world-editor", pk=world.pk)
