"""The admin's QA settings for a project: the review policy (approvals, gates, queue alert)
and the checklist reviewers answer."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from accounts.models import Project
from accounts.selectors import project_admin_get
from core.exceptions import ApplicationError
from core.views import render_error
from reviews import selectors, services
from reviews.forms import ReviewPolicyForm
from reviews.models import ChecklistItem


def _project(request: HttpRequest, project_pk: int) -> Project:
    """The project, for its admins; 404 for anyone else (admin-only pages are hidden, as packs are)."""
    return project_admin_get(user=request.user, project_id=project_pk).project


def _context(project: Project, form: ReviewPolicyForm | None = None) -> dict:
    policy = selectors.review_policy_for_project(project_id=project.pk)
    items = selectors.checklist_items(project_id=project.pk)
    return {"project": project, "form": form or ReviewPolicyForm(instance=policy), "items": items,
            "defaults": bool(items) and items[0].pk is None}


@require_GET
def review_settings(request: HttpRequest, project_pk: int) -> HttpResponse:
    return render(request, "reviews/review_settings.html", _context(_project(request, project_pk)))


@require_POST
def policy_update(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = _project(request, project_pk)
    form = ReviewPolicyForm(request.POST, instance=selectors.review_policy_for_project(project_id=project.pk))
    try:
        if not form.is_valid():
            raise ApplicationError("Check the highlighted settings.")
        services.review_policy_update(project_id=project.pk, user=request.user,
                                      **{name: form.cleaned_data[name] for name in ReviewPolicyForm.Meta.fields})
    except ApplicationError as error:
        return render_error(request, "reviews/review_settings.html", _context(project, form), error)
    waiting = selectors.submissions_waiting_count(project_id=project.pk)
    messages.success(request, "Review policy saved. It applies to tasks submitted from now on" + (
        f"; the {waiting} submission{'s' if waiting != 1 else ''} already waiting keep{'s' if waiting == 1 else ''} the number of "
        f"approvals {'it was' if waiting == 1 else 'they were'} submitted with." if waiting else "."))
    return redirect("review-settings", project_pk=project.pk)


@require_POST
def checklist_customise(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = _project(request, project_pk)
    services.checklist_ensure(project_id=project.pk)
    return redirect("review-settings", project_pk=project.pk)


@require_POST
def checklist_add(request: HttpRequest, project_pk: int) -> HttpResponse:
    project = _project(request, project_pk)
    try:
        services.checklist_item_add(project_id=project.pk, user=request.user, text=request.POST.get("text", ""))
    except ApplicationError as error:
        return render_error(request, "reviews/review_settings.html", _context(project), error)
    return redirect("review-settings", project_pk=project.pk)


def _item(request: HttpRequest, pk: int) -> ChecklistItem:
    item = get_object_or_404(ChecklistItem.objects.select_related("project"), pk=pk)
    _project(request, item.project_id)  # 404 unless an admin of its project
    return item


@require_POST
def checklist_item_update(request: HttpRequest, pk: int) -> HttpResponse:
    item = _item(request, pk)
    try:
        services.checklist_item_update(item=item, user=request.user, text=request.POST.get("text", ""))
    except ApplicationError as error:
        return render_error(request, "reviews/review_settings.html", _context(item.project), error)
    return redirect("review-settings", project_pk=item.project_id)


@require_POST
def checklist_item_retire(request: HttpRequest, pk: int) -> HttpResponse:
    item = _item(request, pk)
    try:
        services.checklist_item_retire(item=item, user=request.user)
    except ApplicationError as error:
        return render_error(request, "reviews/review_settings.html", _context(item.project), error)
    return redirect("review-settings", project_pk=item.project_id)
