"""How the criteria of two rubric versions of a task correspond. A new version starts as a
copy of the one before (authoring.services.rubric_version_editable), so a criterion keeps its
text, points and position until the author changes them; these reads pair the criteria of two
versions back up for "what changed" and for carrying expert calls over."""

from dataclasses import dataclass

from authoring.models import Criterion, RubricVersion


def criterion_key(criterion: Criterion) -> tuple[str, int]:
    """What makes two criteria of different versions the same criterion for an expert's call:
    the same text and the same points (its tag, grader or explanation do not change what a
    verdict on it means)."""
    return (criterion.text, criterion.points)


@dataclass
class CriterionPair:
    old: Criterion | None
    new: Criterion | None
    old_number: int | None  # the numbers the author sees in each version (1..n)
    new_number: int | None

    @property
    def kind(self) -> str:
        """same | changed (its text or points) | added | removed."""
        if self.old is None:
            return "added"
        if self.new is None:
            return "removed"
        return "same" if criterion_key(self.old) == criterion_key(self.new) else "changed"

    @property
    def text_changed(self) -> bool:
        return self.old is not None and self.new is not None and self.old.text != self.new.text

    @property
    def points_changed(self) -> bool:
        return self.old is not None and self.new is not None and self.old.points != self.new.points


def criteria_pairs(old: list[Criterion], new: list[Criterion]) -> list[CriterionPair]:
    """The criteria of two versions (each in its rubric's order) paired: first those with the
    same text and points, then the same text (its points changed), then by stored position
    among the rest (an edit in place keeps a criterion's position; a delete leaves the
    others' alone). In the new version's order; the removed ones last."""
    old_numbers = {c.pk: n for n, c in enumerate(old, start=1)}
    left = list(old)
    matched: dict[int, Criterion] = {}
    for same in (criterion_key, lambda c: c.text, lambda c: c.position):
        for criterion in new:
            if criterion.pk in matched:
                continue
            found = next((o for o in left if same(o) == same(criterion)), None)
            if found is not None:
                matched[criterion.pk] = found
                left.remove(found)
    pairs = [CriterionPair(old=matched.get(c.pk), new=c, old_number=old_numbers.get(matched[c.pk].pk) if c.pk in matched else None,
                           new_number=n)
             for n, c in enumerate(new, start=1)]
    pairs += [CriterionPair(old=o, new=None, old_number=old_numbers[o.pk], new_number=None) for o in left]
    return pairs


def changed_since_previous(rubric_version: RubricVersion, criteria: list[Criterion]) -> tuple[int | None, set[int]]:
    """The number of the task's version before this one, and the criteria of this one that are
    new or changed since it (no criterion there with the same text and points): expert calls
    start empty on those. (None, empty) for a first version."""
    previous = rubric_version.env_task.rubric_versions.filter(number__lt=rubric_version.number).order_by("-number").first()
    if previous is None:
        return None, set()
    before = {criterion_key(c) for c in previous.criteria.all()}
    return previous.number, {c.pk for c in criteria if criterion_key(c) not in before}
