from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.models import Role
from accounts.selectors import project_admin_get, project_list_for_user
from authoring.selectors import env_tasks_in_project
from core.exceptions import ApplicationError
from core.listing import ListSpec, list_page
from core.views import render_error, render_with_error
from packs import selectors, services
from packs.downloads import format_download_response
from packs.formats import FORMATS
from packs.forms import PackForm, PackImportForm
from packs.models import Pack, PackStatus
from reviews.models import Submission


def _admin_membership(request: HttpRequest, project_pk: int):
    """Packs are an admin's business: 404 for anyone else (accounts.selectors.project_admin_get)."""
    return project_admin_get(user=request.user, project_id=project_pk)


def _build_form_context(request: HttpRequest, project, approved: list[Submission], form: PackForm | None = None, **extra) -> dict:
    """The Packs page. What is ticked: after a refused build, what the admin had ticked; at
    first, every format and the newest approved version of each task (a pack holds one
    version of a task, so ticking every version would always be refused)."""
    if form is not None and form.is_bound:
        ticked = {str(pk) for pk in form.data.getlist("submissions")}
        ticked_formats = set(form.data.getlist("formats"))
    else:
        ticked = {str(s.pk) for s in approved if s.newer_number is None}
        ticked_formats = set(FORMATS)
    return {"project": project, "approved": approved, "form": form or PackForm(approved=approved), "import_form": PackImportForm(),
            "formats": [(key, label) for key, (_, _, label) in FORMATS.items()], "ticked": ticked, "ticked_formats": ticked_formats,
            "packs": selectors.pack_list_for_user(user=request.user, project_id=project.pk), **extra}


@require_http_methods(["GET", "POST"])
def pack_list(request: HttpRequest, project_pk: int) -> HttpResponse:
    membership = _admin_membership(request, project_pk)
    approved = selectors.approved_for_pack(user=request.user, project_id=project_pk)
    form = PackForm(request.POST or None, approved=approved)
    context = _build_form_context(request, membership.project, approved, form)
    if request.method == "POST":
        try:
            if not form.is_valid():
                raise ApplicationError("Name the pack, tick at least one approved task and at least one format.")
            services.pack_create(
                project_id=project_pk, user=request.user, name=form.cleaned_data["name"], submission_ids=form.cleaned_data["submissions"],
                formats=form.cleaned_data["formats"],
            )
        except ApplicationError as error:
            return render_error(request, "packs/pack_list.html", context, error)
        return redirect("pack-list", project_pk=project_pk)
    return render(request, "packs/pack_list.html", context)


PACKS = ListSpec(
    sorts={"created": ("created_at", "id"), "name": ("name", "version", "id"), "project": ("project__name", "-created_at", "id")},
    default_sort="-created", filters={"status": ("status", PackStatus.values)}, search=("name",),
)


@require_GET
def pack_index(request: HttpRequest) -> HttpResponse:
    """The navigation's Packs for an admin of several projects: every pack of the projects
    they administer, a page at a time, and a link to each project's packs to build one."""
    packs = list_page(request, selectors.pack_list_for_user(user=request.user), PACKS)
    projects = project_list_for_user(user=request.user).filter(memberships__user=request.user, memberships__role=Role.ADMIN)
    context = {"listing": packs, "packs": packs.rows, "projects": projects.order_by("name", "pk"), "statuses": PackStatus.choices}
    return render(request, "packs/pack_index.html", context)


@require_POST
def pack_import(request: HttpRequest, project_pk: int) -> HttpResponse:
    membership = _admin_membership(request, project_pk)
    form = PackImportForm(request.POST, request.FILES)
    try:
        if not form.is_valid():
            raise ApplicationError("Choose a pack zip to import.")
        tasks = services.pack_import(project_id=project_pk, user=request.user, uploaded_file=form.cleaned_data["file"],
                                     again=form.cleaned_data["again"])
    except ApplicationError as error:
        approved = selectors.approved_for_pack(user=request.user, project_id=project_pk)
        context = _build_form_context(request, membership.project, approved, import_error=error.message)
        context["import_form"] = form
        return render(request, "packs/pack_list.html", context, status=400)
    # Redirected: reloading the result page must not import the pack a second time.
    return redirect(f"{reverse('pack-imported', args=[project_pk])}?tasks={','.join(str(t.pk) for t in tasks)}")


@require_GET
def pack_imported(request: HttpRequest, project_pk: int) -> HttpResponse:
    """What an import made: the tasks named in ?tasks= that the user may see in the project."""
    membership = _admin_membership(request, project_pk)
    ids = [int(part) for part in request.GET.get("tasks", "").split(",") if part.isdigit()][:1000]
    tasks = env_tasks_in_project(user=request.user, project_id=project_pk, ids=ids)
    return render(request, "packs/pack_imported.html", {"project": membership.project, "tasks": tasks})


@require_GET
def pack_detail(request: HttpRequest, pk: int) -> HttpResponse:
    pack = selectors.pack_get_for_user(user=request.user, pk=pk)
    previous = selectors.pack_previous_version(pack=pack) if pack.status == PackStatus.READY else None
    manifest = pack.manifest or {}
    contents = manifest.get("contents") or {}
    formats = [{"key": key, "label": FORMATS[key][2], "files": contents.get(key, [])} for key in pack.formats if key in FORMATS]
    diff = selectors.pack_diff(pack=pack, previous=previous) if previous else None
    context = {
        "project": pack.project, "pack": pack, "formats": formats, "files": manifest.get("files") or [],
        "worlds": pack.world_entries.all(), "tasks": pack.task_entries.all()[:200], "task_total": pack.task_entries.count(),
        "previous": previous, "diff": diff,
        "formats_changed": {side: [FORMATS[key][2] for key in keys if key in FORMATS] for side, keys in diff["formats"].items()}
        if diff else None,
        "versions": selectors.pack_versions(pack=pack),
    }
    return render(request, "packs/pack_detail.html", context)


@require_POST
def pack_build_again(request: HttpRequest, pk: int) -> HttpResponse:
    pack = selectors.pack_get_for_user(user=request.user, pk=pk)
    try:
        again = services.pack_build_again(pack=pack, user=request.user)
    except ApplicationError as error:
        return render_error(request, "packs/pack_detail.html", {"project": pack.project, "pack": pack, "formats": [], "files": []}, error)
    return redirect("pack-detail", pk=again.pk)


@require_GET
def pack_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled every 2 s while the pack builds; renders without the trigger once done."""
    pack = selectors.pack_get_for_user(user=request.user, pk=pk)
    if request.GET.get("on") == "detail":
        response = render(request, "packs/pack_detail.html#pack-row", {"pack": pack})
        if pack.is_done:
            response["HX-Refresh"] = "true"  # the formats, tasks and checksums appear with the whole page
        return response
    return render(request, "packs/pack_list.html#pack-row", {"pack": pack})


@require_POST
def pack_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Stop a pack's build; htmx gets the pack's row back (the list's, or the detail page's
    with ?on=detail), saying Cancelled and how far the build got."""
    pack = selectors.pack_get_for_user(user=request.user, pk=pk)
    row = f"packs/{'pack_detail' if request.GET.get('on') == 'detail' else 'pack_list'}.html#pack-row"
    try:
        pack = services.pack_cancel(pack=pack, user=request.user)
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect("pack-detail", pk=pack.pk)
        return render_with_error(request, row, {"pack": selectors.pack_get_for_user(user=request.user, pk=pk),
                                                "cancel_error": error.message}, error)
    if not request.htmx:
        return redirect("pack-detail", pk=pack.pk)
    return render(request, row, {"pack": selectors.pack_get_for_user(user=request.user, pk=pk)})


def _ready(pack: Pack) -> bool:
    return pack.status == PackStatus.READY and bool(pack.file)


@require_GET
def pack_download(request: HttpRequest, pk: int) -> HttpResponse:
    pack = selectors.pack_get_for_user(user=request.user, pk=pk)
    if not _ready(pack):
        return redirect("pack-list", project_pk=pack.project_id)
    try:
        handle = pack.file.open("rb")
    except FileNotFoundError:  # removed from the store behind our back
        raise Http404("This pack's file is missing from storage; build a new version.") from None
    response = FileResponse(handle, as_attachment=True, filename=pack.filename, content_type="application/zip")
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
def pack_download_format(request: HttpRequest, pk: int, key: str) -> HttpResponse:
    pack = selectors.pack_get_for_user(user=request.user, pk=pk)
    if not _ready(pack):
        return redirect("pack-detail", pk=pack.pk)
    return format_download_response(pack, key)
