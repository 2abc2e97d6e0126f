"""The skeleton proposal's review on the world editor: edit, reject or bring back each
proposed item, and add the expert's own rows, before accepting them into the data room.
Every answer is the refreshed proposal panel (the world editor's #skeleton-proposal)."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from authoring import selectors
from authoring.forms import DocumentSkeletonForm
from authoring.models import SkeletonProposal
from authoring.services import skeletons
from authoring.views.drafting import drafting_context
from core.exceptions import ApplicationError
from core.views import render_with_error

WORLD = "authoring/world_editor.html"


def _form_error(form: DocumentSkeletonForm) -> ApplicationError:
    field, errors = next(iter(form.errors.items()))
    label = "" if field == "__all__" else f"{form.fields[field].label or field.replace('_', ' ').capitalize()}: "
    return ApplicationError(f"{label}{errors[0]}")


def _panel(request: HttpRequest, proposal: SkeletonProposal, error: ApplicationError | None = None, **extra) -> HttpResponse:
    """The refreshed proposal for htmx; a redirect to the world editor (with the message) otherwise."""
    world = proposal.world
    if not request.htmx:
        if error is not None:
            messages.error(request, error.message)
        return redirect("world-editor", pk=world.pk)
    context = {
        "world": world, "can_author": True, **drafting_context(world),
        "skeleton_proposal_error": error.message if error else None, **extra,
    }
    return render_with_error(request, f"{WORLD}#skeleton-proposal", context, error)


def _fields(form: DocumentSkeletonForm) -> dict:
    if not form.is_valid():
        raise _form_error(form)
    return {name: form.cleaned_data[name] for name in skeletons.EDITABLE_FIELDS}


@require_http_methods(["GET", "POST"])
def skeleton_item(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """One proposed item: its row, its inline editor (?edit=1), or (POST) the edit saved."""
    proposal = selectors.skeleton_proposal_get_for_user(user=request.user, pk=pk)
    if request.method == "GET":
        if not 0 <= index < len(proposal.items):
            return _panel(request, proposal)
        item = proposal.items[index]
        initial = {name: item.get(name, "") for name in skeletons.EDITABLE_FIELDS}
        context = {
            "proposal": proposal, "item": item, "index": index, "can_author": True,
            "item_form": DocumentSkeletonForm(initial=initial, auto_id=f"skeleton-item-{index}-%s"),
        }
        partial = "skeleton-item-form" if request.GET.get("edit") else "skeleton-item-row"
        return render(request, f"{WORLD}#{partial}", context)
    try:
        skeletons.skeleton_item_update(
            proposal=proposal, user=request.user, index=index, **_fields(DocumentSkeletonForm(request.POST))
        )
    except ApplicationError as error:
        return _panel(request, proposal, error)
    return _panel(request, proposal)


@require_POST
def skeleton_item_reject(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """Reject an item (it is never accepted), or bring it back with restore=1."""
    proposal = selectors.skeleton_proposal_get_for_user(user=request.user, pk=pk)
    try:
        skeletons.skeleton_item_reject(proposal=proposal, user=request.user, index=index, rejected=not request.POST.get("restore"))
    except ApplicationError as error:
        return _panel(request, proposal, error)
    return _panel(request, proposal)


@require_POST
def skeleton_item_add(request: HttpRequest, pk: int) -> HttpResponse:
    """The expert's own row; on a refusal the add form keeps what was typed."""
    proposal = selectors.skeleton_proposal_get_for_user(user=request.user, pk=pk)
    form = DocumentSkeletonForm(request.POST, auto_id="skeleton-new-%s")
    try:
        skeletons.skeleton_item_add(proposal=proposal, user=request.user, **_fields(form))
    except ApplicationError as error:
        return _panel(request, proposal, error, skeleton_new_form=form)
    return _panel(request, proposal)
