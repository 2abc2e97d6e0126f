"""Saving the task form together with the criterion editors left open on the same page.

"Save task" used to save the prompt and silently drop an open criterion edit. Now the page
sends the open, changed criterion editors with the task form and both are saved in one
transaction, or nothing is saved and the message says which edit could not be."""

from dataclasses import dataclass

from django.db import transaction

from accounts.models import User
from authoring.models import Criterion, EnvTask, GraderKind
from authoring.services.tasks import criterion_update, env_task_update
from core.exceptions import ApplicationError


@dataclass
class CriterionEdit:
    """An open criterion editor's values, as the author left them."""

    criterion: Criterion
    base_revision: int | None  # the rubric's revision the editor was opened on
    text: str
    points: int
    tag: str
    explanation: str = ""
    grader_kind: str = GraderKind.LLM_JUDGE
    grader_config: dict | None = None


def _label(criterion: Criterion) -> str:
    text = criterion.text if len(criterion.text) <= 60 else criterion.text[:59] + "…"
    return f"criterion {criterion.position} (“{text}”)"


def _unchanged(edit: CriterionEdit) -> bool:
    c = edit.criterion
    return (c.text, c.points, c.tag, c.explanation, c.grader_kind, c.grader_config) == (
        edit.text.strip(), edit.points, edit.tag, edit.explanation, edit.grader_kind, edit.grader_config or {}
    )


@transaction.atomic
def env_task_update_with_criteria(
    *, env_task: EnvTask, user: User, base_revision: int | None, title: str, prompt: str, deliverable_kind: str,
    reference_answer: str, criterion_edits: list[CriterionEdit],
) -> tuple[EnvTask, int]:
    """Save the task and every open criterion edit, all or nothing. Returns the task and
    how many criteria changed. The editors were opened on one rubric revision: the first
    edit is checked against it, the next ones follow the revision the previous one made
    (an editor opened on an older revision is refused as a stale edit)."""
    env_task = env_task_update(
        env_task=env_task, user=user, base_revision=base_revision, title=title, prompt=prompt,
        deliverable_kind=deliverable_kind, reference_answer=reference_answer,
    )
    opened_on: int | None = None
    current: int | None = None
    saved = 0
    for edit in criterion_edits:
        if edit.criterion.rubric_version.env_task_id != env_task.pk:
            raise ApplicationError("That criterion is not in this task's rubric; reload the page.")
        if _unchanged(edit):
            continue
        base = edit.base_revision
        if opened_on is None:
            opened_on = base
        elif base == opened_on:
            base = current
        try:
            criterion_update(
                criterion=edit.criterion, user=user, base_revision=base, text=edit.text, points=edit.points, tag=edit.tag,
                explanation=edit.explanation, grader_kind=edit.grader_kind, grader_config=edit.grader_config,
            )
        except ApplicationError as error:  # a stale rubric too: said in words, with the task left unsaved
            raise ApplicationError(
                f"Nothing was saved: {_label(edit.criterion)} is open with an edit that cannot be saved. {error.message}"
            ) from None
        current = env_task.rubric_versions.order_by("-number").values_list("revision", flat=True).first()
        saved += 1
    return env_task, saved
