"""The criterion editors left open when "Save task" is pressed.

static/js/unsaved.js adds each open criterion editor that has changes to the task form's
request: `open_criteria=<id>` and its fields prefixed `criterion-<id>-` (the editor's own
field names would collide with the task form's). The task editor view saves them with the
task (authoring.services.task_edits), all or nothing."""

from django.http import HttpRequest

from authoring import selectors
from authoring.forms import CriterionForm
from authoring.models import EnvTask
from authoring.services.task_edits import CriterionEdit
from core.exceptions import ApplicationError

MAX_OPEN_EDITORS = 50


def criterion_edits_from(request: HttpRequest, env_task: EnvTask) -> list[CriterionEdit]:
    """The open criterion edits the request carries, each checked like a criterion save;
    the first that does not validate refuses the whole save, saying which one."""
    ids = list(dict.fromkeys(v for v in request.POST.getlist("open_criteria") if v.isdigit()))[:MAX_OPEN_EDITORS]
    edits = []
    for raw_id in ids:
        criterion = selectors.criterion_get_for_user(user=request.user, pk=int(raw_id))
        if criterion.rubric_version.env_task_id != env_task.pk:
            raise ApplicationError("A criterion editor on this page belongs to another task; reload the page.")
        form = CriterionForm(request.POST, prefix=f"criterion-{criterion.pk}")
        if not form.is_valid():
            field, messages = next(iter(form.errors.items()))
            label = "" if field == "__all__" else f"{form.fields[field].label or field.replace('_', ' ').capitalize()}: "
            raise ApplicationError(
                f"Nothing was saved: criterion {criterion.position} is open with an edit that cannot be saved. {label}{messages[0]}"
            )
        data = form.cleaned_data
        grader_kind, grader_config = form.grader() or (criterion.grader_kind, criterion.grader_config)
        edits.append(CriterionEdit(
            criterion=criterion, base_revision=data["revision"], text=data["text"], points=data["points"], tag=data["tag"],
            explanation=data["explanation"], grader_kind=grader_kind, grader_config=grader_config,
        ))
    return edits
