from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.selectors import membership_for
from authoring import selectors, services
from authoring.data_room import WHOLE_TREE_MAX, data_room_view, where_asked
from authoring.forms import (
    ALL_METADATA_FIELDS,
    METADATA_FIELDS,
    METADATA_HINTS,
    CriterionForm,
    DocumentForm,
    DocumentSkeletonForm,
    EnvTaskCreateForm,
    EnvTaskForm,
    MoveForm,
    WorldForm,
)
from authoring.models import EnvTask, World
from authoring.render_check import document_problem
from authoring.rendering import preview_html
from authoring.services.task_edits import env_task_update_with_criteria
from authoring.views.drafting import drafting_context
from authoring.views.open_edits import criterion_edits_from
from authoring.views.task_files import input_files_context
from core.exceptions import ApplicationError
from core.sanitize import markdown_to_safe_html
from core.views import render_error, render_with_error
from llm.selectors import endpoint_picker


def _form_error(form) -> ApplicationError:
    first = next(iter(form.errors.items()))
    field, messages = first
    label = "" if field == "__all__" else f"{form.fields[field].label or field.replace('_', ' ').capitalize()}: "
    return ApplicationError(f"{label}{messages[0]}")


# --- World editor ----------------------------------------------------------------------

WORLD_TASKS_SHOWN = 20


def _world_context(request: HttpRequest, world: World, *, folder: str | None = None, **extra) -> dict:
    membership = membership_for(user=request.user, project_id=world.project_id)
    asked_folder, page = where_asked(request) if folder is None else (folder, None)
    data_room = data_room_view(world=world, folder=asked_folder, page=page)
    return {
        **drafting_context(world),
        "world": world,
        "project": world.project,
        "can_author": membership.can_author,
        "data_room": data_room,
        "tree": data_room.tree,
        "document_count": data_room.document_count,
        "skeleton_form": DocumentSkeletonForm(),
        "env_tasks": world.env_tasks.order_by("-updated_at", "id")[:WORLD_TASKS_SHOWN],
        "env_task_count": world.env_tasks.count(),
        **extra,
    }


@require_http_methods(["GET", "POST"])
def world_editor(request: HttpRequest, pk: int) -> HttpResponse:
    world = selectors.world_get_for_user(user=request.user, pk=pk)
    template = "authoring/world_editor.html"
    if request.method == "POST":
        form = WorldForm(request.POST)
        facts = form.facts_from(request.POST)
        try:
            if not form.is_valid():
                raise _form_error(form)
            world = services.world_update(
                world=world, user=request.user, title=form.cleaned_data["title"], outline=form.cleaned_data["outline"],
                facts=facts, base_revision=form.cleaned_data["revision"],
            )
        except ApplicationError as error:
            unsaved = {"title": request.POST.get("title", ""), "outline": request.POST.get("outline", ""), "facts": facts}
            return render_error(
                request, template + ("#world-form" if request.htmx else ""), _world_context(request, world, unsaved=unsaved), error
            )
        if not request.htmx:
            return redirect("world-editor", pk=world.pk)
        return render(request, template + "#world-form", _world_context(request, world, saved=True))
    # refreshed after drafting, or a folder / page of the data room opened in place
    if request.htmx and (request.GET.get("fragment") == "data-room" or request.headers.get("HX-Target") == "data-room"):
        return render(request, template + "#data-room", _world_context(request, world))
    return render(request, template, _world_context(request, world))


def _data_room(request: HttpRequest, world: World, error: ApplicationError | None = None, **extra) -> HttpResponse:
    """Answer a data-room change: the refreshed tree for htmx, a redirect otherwise.
    On error the message shows above the tree and the add form keeps what was typed."""
    if error is None and not request.htmx:
        return redirect("world-editor", pk=world.pk)
    context = _world_context(request, world, data_room_error=error.message if error else None, **extra)
    template = "authoring/world_editor.html" + ("#data-room" if request.htmx else "")
    return render_with_error(request, template, context, error)


@require_POST
def document_add(request: HttpRequest, world_pk: int) -> HttpResponse:
    world = selectors.world_get_for_user(user=request.user, pk=world_pk)
    form = DocumentSkeletonForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        data = form.cleaned_data
        document = services.document_create(
            world=world, user=request.user, path=data["path"], kind=data["kind"], format=data["format"],
            brief=data["brief"], target_size=data["target_size"],
        )
    except ApplicationError as error:
        return _data_room(request, world, error, skeleton_form=form)
    by_folder = where_asked(request)[0] is not None or world.documents.count() > WHOLE_TREE_MAX
    return _data_room(request, world, folder=document.folder if by_folder else None)  # show where it went


@require_http_methods(["GET", "POST"])
def document_row(request: HttpRequest, pk: int) -> HttpResponse:
    """Inline edit of one skeleton line in the data-room tree."""
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    if request.method == "GET":
        initial = {f: getattr(document, f) for f in ("path", "kind", "format", "brief", "target_size", "revision")}
        row_form = DocumentSkeletonForm(initial=initial, auto_id=f"document-{document.pk}-%s")
        context = {"document": document, "row_form": row_form, "can_author": True}
        template = (
            "authoring/world_editor.html#document-row-form" if request.GET.get("edit") else "authoring/world_editor.html#document-row"
        )
        return render(request, template, context)
    form = DocumentSkeletonForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        data = form.cleaned_data
        services.document_update(
            document=document, user=request.user, base_revision=data["revision"], path=data["path"], kind=data["kind"],
            format=data["format"], brief=data["brief"], target_size=data["target_size"],
        )
    except ApplicationError as error:
        return _data_room(request, document.world, error)
    return _data_room(request, document.world)


@require_POST
def document_move(request: HttpRequest, pk: int) -> HttpResponse:
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    form = MoveForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        services.document_move(document=document, user=request.user, direction=form.cleaned_data["direction"])
    except ApplicationError as error:
        return _data_room(request, document.world, error)
    return _data_room(request, document.world)


@require_POST
def document_delete(request: HttpRequest, pk: int) -> HttpResponse:
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    world = document.world
    try:
        services.document_delete(document=document, user=request.user)
    except ApplicationError as error:
        return _data_room(request, world, error)
    return _data_room(request, world)


# --- Document editor -------------------------------------------------------------------

def _preview(document, content: str, metadata: dict):
    """The document as it will look, sanitized; falls back to plain markdown while the
    content does not parse for its format (the download explains why)."""
    try:
        return preview_html(document.kind, document.format, content, metadata)
    except ApplicationError:
        return markdown_to_safe_html(content)


def _document_context(request: HttpRequest, document, form=None, **extra) -> dict:
    membership = membership_for(user=request.user, project_id=document.world.project_id)
    if form is None:
        initial = {f: getattr(document, f) for f in ("path", "kind", "format", "brief", "target_size", "content", "revision")}
        initial["locked"] = document.status == "locked"
        form = DocumentForm(initial=initial)
    metadata = extra.pop("metadata", document.metadata)
    return {
        "document": document,
        "world": document.world,
        "project": document.world.project,
        "form": form,
        "metadata_fields": [
            (key, metadata.get(key, ""), *METADATA_HINTS.get(key, (key.capitalize(), "")))
            for key in dict.fromkeys([*METADATA_FIELDS.get(document.kind, []), *ALL_METADATA_FIELDS])
            if key in METADATA_FIELDS.get(document.kind, []) or metadata.get(key)
        ],
        "preview": _preview(document, form["content"].value() or "", metadata),
        # (of the saved document: what submitting the task would refuse)
        "build_problem": document_problem(document=document).rstrip("."),  # (the page ends the sentence)
        "endpoints": endpoint_picker(project_id=document.world.project_id),
        "can_author": membership.can_author,
        **extra,
    }


@require_http_methods(["GET", "POST"])
def document_editor(request: HttpRequest, pk: int) -> HttpResponse:
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    template = "authoring/document_editor.html"
    if request.method == "GET":
        return render(request, template, _document_context(request, document))
    form = DocumentForm(request.POST)
    metadata = form.metadata_from(request.POST, document.metadata)
    try:
        if not form.is_valid():
            raise _form_error(form)
        data = form.cleaned_data
        document = services.document_update(
            document=document, user=request.user, base_revision=data["revision"], path=data["path"], kind=data["kind"],
            format=data["format"], brief=data["brief"], target_size=data["target_size"], content=data["content"],
            metadata=metadata, locked=data["locked"],
        )
    except ApplicationError as error:
        partial = "#document-form" if request.htmx else ""
        return render_error(request, template + partial, _document_context(request, document, form=form, metadata=metadata), error)
    if not request.htmx:
        return redirect("document-editor", pk=document.pk)
    return render(request, template + "#document-form", _document_context(request, document, saved=True))


@require_POST
def document_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """Sanitized preview of unsaved content and details (sender, date…): renders, saves nothing."""
    document = selectors.document_get_for_user(user=request.user, pk=pk)
    metadata = DocumentForm().metadata_from(request.POST, document.metadata)
    return render(
        request,
        "authoring/document_editor.html#preview",
        {"preview": _preview(document, request.POST.get("content", ""), metadata)},
    )


# --- Task editor -----------------------------------------------------------------------

@require_POST
def task_create(request: HttpRequest, world_pk: int) -> HttpResponse:
    world = selectors.world_get_for_user(user=request.user, pk=world_pk)
    form = EnvTaskCreateForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        env_task = services.env_task_create(world=world, user=request.user, title=form.cleaned_data["title"])
    except ApplicationError as error:
        return render_error(request, "authoring/world_editor.html", _world_context(request, world), error)
    return redirect("task-editor", pk=env_task.pk)


# The task page's tabs, in order; ?tab= picks one (anything else shows the first).
TASK_TABS = (
    ("prompt", "Prompt & rubric"), ("trials", "Trials"), ("verifier", "Verifier quality"), ("review", "Review"),
    ("history", "History"),
)


def _task_tab(request: HttpRequest) -> str:
    asked = request.GET.get("tab", "")
    return asked if asked in dict(TASK_TABS) else TASK_TABS[0][0]


def _task_context(request: HttpRequest, env_task: EnvTask, form=None, **extra) -> dict:
    membership = membership_for(user=request.user, project_id=env_task.project_id)
    if form is None:
        form = EnvTaskForm(
            initial={f: getattr(env_task, f) for f in ("title", "prompt", "deliverable_kind", "reference_answer", "revision")}
        )
    rubric = selectors.rubric_version_current(env_task=env_task)
    return {
        "env_task": env_task,
        "world": env_task.world,
        "project": env_task.project,
        "form": form,
        "can_author": membership.can_author,
        "editable": membership.can_author and env_task.is_editable,
        "criterion_form": CriterionForm(auto_id="new-criterion-%s"),
        "tabs": TASK_TABS,
        "tab": _task_tab(request),
        "approved_version": selectors.approved_version_number(env_task=env_task) if env_task.status != "approved" else None,
        **selectors.rubric_summary(rubric_version=rubric),
        **input_files_context(request, env_task),
        **extra,
    }


@require_http_methods(["GET", "POST"])
def task_editor(request: HttpRequest, pk: int) -> HttpResponse:
    env_task = selectors.env_task_get_for_user(user=request.user, pk=pk)
    template = "authoring/task_editor.html"
    if request.method == "GET":
        if request.htmx and request.GET.get("part") == "rubric":  # refreshed when the verifier panel changes the rubric
            return render(request, template + "#rubric", _task_context(request, env_task))
        return render(request, template, _task_context(request, env_task))
    form = EnvTaskForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        # The criterion editors left open on the page are saved with the task, or nothing is (issue 17).
        env_task, criteria_saved = env_task_update_with_criteria(
            env_task=env_task, user=request.user, base_revision=form.cleaned_data["revision"],
            criterion_edits=criterion_edits_from(request, env_task),
            **{k: form.cleaned_data[k] for k in ("title", "prompt", "deliverable_kind", "reference_answer")},
        )
    except ApplicationError as error:
        return render_error(request, template + ("#task-form" if request.htmx else ""), _task_context(request, env_task, form=form), error)
    if not request.htmx:
        return redirect("task-editor", pk=env_task.pk)
    response = render(request, template + "#task-form", _task_context(request, env_task, saved=True, criteria_saved=criteria_saved))
    if criteria_saved:
        response["HX-Trigger"] = "rubric-settings-changed, criteria-changed"  # the rubric shows the saved criteria
    return response


@require_POST
def task_new_version(request: HttpRequest, pk: int) -> HttpResponse:
    """An approved task back to draft for its next version (its approved one stays in packs)."""
    env_task = selectors.env_task_get_for_user(user=request.user, pk=pk)
    try:
        services.env_task_start_new_version(env_task=env_task, user=request.user)
    except ApplicationError as error:
        return render_error(request, "authoring/task_editor.html", _task_context(request, env_task), error)
    messages.success(request, "A new version is open for editing. The approved version stays what packs hold until this one is "
                              "approved.")
    return redirect("task-editor", pk=env_task.pk)


def _rubric(request: HttpRequest, env_task: EnvTask, error: ApplicationError | None = None, **kept) -> HttpResponse:
    """`kept`: on a refusal, the forms as the author typed them (nothing typed is dropped)."""
    env_task.refresh_from_db()
    if not request.htmx:
        if error is None:
            return redirect("task-editor", pk=env_task.pk)
        return render_error(request, "authoring/task_editor.html", _task_context(request, env_task, **kept), error)
    if error is not None:
        return render_error(request, "authoring/task_editor.html#rubric", _task_context(request, env_task, **kept), error)
    response = render(request, "authoring/task_editor.html#rubric", _task_context(request, env_task))
    response["HX-Trigger"] = "criteria-changed"  # the verifier panel (rollouts) reloads its rubric-dependent parts
    return response


@require_POST
def criterion_add(request: HttpRequest, task_pk: int) -> HttpResponse:
    env_task = selectors.env_task_get_for_user(user=request.user, pk=task_pk)
    form = CriterionForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        data = form.cleaned_data
        grader_kind, grader_config = form.grader() or ("llm_judge", {})
        services.criterion_add(
            env_task=env_task, user=request.user, base_revision=data["revision"], text=data["text"], points=data["points"],
            tag=data["tag"], explanation=data["explanation"], grader_kind=grader_kind, grader_config=grader_config,
        )
    except ApplicationError as error:
        return _rubric(request, env_task, error, criterion_form=CriterionForm(request.POST, auto_id="new-criterion-%s"))
    return _rubric(request, env_task)


@require_http_methods(["GET", "POST"])
def criterion_row(request: HttpRequest, pk: int) -> HttpResponse:
    criterion = selectors.criterion_get_for_user(user=request.user, pk=pk)
    env_task = criterion.rubric_version.env_task
    if request.method == "GET":
        rubric = criterion.rubric_version
        initial = {
            **criterion.as_dict(),
            "revision": rubric.revision,
            **CriterionForm.grader_initial(criterion.grader_kind, criterion.grader_config),
        }
        row_form = CriterionForm(initial=initial, auto_id=f"criterion-{criterion.pk}-%s")
        template = (
            "authoring/task_editor.html#criterion-row-form" if request.GET.get("edit") else "authoring/task_editor.html#criterion-row"
        )
        return render(request, template, {"criterion": criterion, "row_form": row_form, "rubric": rubric, "editable": True})
    form = CriterionForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        data = form.cleaned_data
        grader_kind, grader_config = form.grader() or (criterion.grader_kind, criterion.grader_config)
        services.criterion_update(
            criterion=criterion, user=request.user, base_revision=data["revision"], text=data["text"], points=data["points"],
            tag=data["tag"], explanation=data["explanation"], grader_kind=grader_kind, grader_config=grader_config,
        )
    except ApplicationError as error:  # the editor stays open with what was typed
        kept = CriterionForm(request.POST, auto_id=f"criterion-{criterion.pk}-%s")
        return _rubric(request, env_task, error, editing_pk=criterion.pk, editing_form=kept)
    return _rubric(request, env_task)


@require_POST
def criterion_move(request: HttpRequest, pk: int) -> HttpResponse:
    criterion = selectors.criterion_get_for_user(user=request.user, pk=pk)
    form = MoveForm(request.POST)
    try:
        if not form.is_valid():
            raise _form_error(form)
        services.criterion_move(
            criterion=criterion, user=request.user, base_revision=form.cleaned_data["revision"], direction=form.cleaned_data["direction"]
        )
    except ApplicationError as error:
        return _rubric(request, criterion.rubric_version.env_task, error)
    return _rubric(request, criterion.rubric_version.env_task)


@require_POST
def criterion_delete(request: HttpRequest, pk: int) -> HttpResponse:
    criterion = selectors.criterion_get_for_user(user=request.user, pk=pk)
    env_task = criterion.rubric_version.env_task
    revision = request.POST.get("revision")
    try:
        services.criterion_delete(
            criterion=criterion, user=request.user, base_revision=int(revision) if revision and revision.isdigit() else None
        )
    except ApplicationError as error:
        return _rubric(request, env_task, error)
    return _rubric(request, env_task)
