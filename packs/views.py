from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from accounts.selectors import membership_get
from accounts.services import require_role
from core.exceptions import ApplicationError
from core.views import render_error
from packs import selectors, services
from packs.forms import PackForm
from packs.models import PackStatus
from reviews.selectors import approved_submissions_for_project


@login_required
@require_http_methods(["GET", "POST"])
def pack_list(request: HttpRequest, project_pk: int) -> HttpResponse:
    membership = membership_get(user=request.user, project_id=project_pk)
    try:
        require_role(membership, "export")
    except ApplicationError:
        raise Http404("Only a project's admins export packs.") from None
    approved = approved_submissions_for_project(user=request.user, project_id=project_pk)
    form = PackForm(request.POST or None, approved=approved)
    context = {"project": membership.project, "approved": approved, "form": form, "packs": selectors.pack_list_for_user(user=request.user, project_id=project_pk)}
    if request.method == "POST":
        try:
            if not form.is_valid():
                raise ApplicationError("Name the pack and tick at least one approved task.")
            services.pack_create(
                project_id=project_pk, user=request.user, name=form.cleaned_data["name"], submission_ids=form.cleaned_data["submissions"]
            )
        except ApplicationError as error:
            return render_error(request, "packs/pack_list.html", context, error)
        return redirect("pack-list", project_pk=project_pk)
    return render(request, "packs/pack_list.html", context)


@login_required
@require_GET
def pack_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled every 2 s while the pack builds; renders without the trigger once done."""
    pack = selectors.pack_get_for_user(user=request.user, pk=pk)
    return render(request, "packs/pack_list.html#pack-row", {"pack": pack})


@login_required
@require_GET
def pack_download(request: HttpRequest, pk: int) -> HttpResponse:
    pack = selectors.pack_get_for_user(user=request.user, pk=pk)
    if pack.status != PackStatus.READY or not pack.file:
        return redirect("pack-list", project_pk=pack.project_id)
    response = FileResponse(pack.file.open("rb"), as_attachment=True, filename=pack.filename, content_type="application/zip")
    response["X-Content-Type-Options"] = "nosniff"
    return response
