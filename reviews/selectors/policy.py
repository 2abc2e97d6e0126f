"""The project's review policy and checklist, as they stand."""

from reviews.models import ChecklistItem, ReviewPolicy

DEFAULT_CHECKLIST = (
    "The world is realistic and consistent",
    "The prompt is clear and self-contained",
    "The rubric covers the ways to be right and wrong",
    "The judge agrees with the expert",
    "The difficulty is learnable",
)


def review_policy_for_project(*, project_id: int) -> ReviewPolicy:
    """The saved policy, or the defaults (unsaved) for a project that never changed it."""
    return ReviewPolicy.objects.filter(project_id=project_id).first() or ReviewPolicy(project_id=project_id)


def checklist_items(*, project_id: int) -> list[ChecklistItem]:
    """The questions a reviewer answers now. A project that never had a checklist shows the
    defaults, unsaved (they are saved with its first submission or its first edit)."""
    items = list(ChecklistItem.objects.filter(project_id=project_id, active=True))
    if items or ChecklistItem.objects.filter(project_id=project_id).exists():
        return items
    return [ChecklistItem(project_id=project_id, text=text, position=i) for i, text in enumerate(DEFAULT_CHECKLIST)]
