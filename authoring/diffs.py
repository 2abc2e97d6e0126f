"""What changed between two versions of a document or of a task's rubric, for the version
pages (authoring.views.versions) and the review page (reviews.selectors.diff).

No reads with access rules here: the callers fetch both versions through access-scoped
selectors. Every piece of text is user text: the HTML built (core.textdiff) escapes it."""

import difflib

from authoring.models import Criterion, CriterionTag, DocumentKind, GraderKind, RubricVersion
from authoring.rendering import RenderError, Workbook, parse_sheets
from authoring.rendering.preview import format_value
from authoring.rendering.sheets import col_letter
from core.textdiff import line_diff_marked, pair_items, text_diff


def _sheet_lines(content: str) -> list[str]:
    """A spreadsheet as the Drive shows it, one line per row: computed values in their number
    formats (a formula's source changes only what its value shows)."""
    structured, where = parse_sheets(content)
    book = Workbook(structured, where)
    lines = []
    for sheet in book.sheets:
        lines.append(f"Sheet {sheet.name}")
        for r in range(1, sheet.max_row + 1):
            values = [(c, format_value(cell.value, cell.number_format)) for c in range(1, sheet.max_col + 1)
                      if (cell := sheet.cells.get((r, c))) is not None]
            shown = [f"{col_letter(c)}{r} {value}" for c, value in values if value != ""]
            if shown:
                lines.append(" · ".join(shown))
    return lines


def shown_lines(document: dict) -> list[str]:
    """What a reader of the document sees, as lines to compare: a message's or an event's
    fields, then its text; a spreadsheet's values (its text when it cannot be computed)."""
    content = document.get("content") or ""
    if document.get("kind") == DocumentKind.FILE and document.get("format") == "xlsx":
        try:
            return _sheet_lines(content)
        except (RenderError, ValueError):
            pass
    fields = [f"{key}: {value}" for key, value in sorted((document.get("metadata") or {}).items()) if value not in ("", None, [], {})]
    return fields + content.splitlines()


def document_versions_diff(*, document, old, new) -> dict:
    """Two DocumentVersions of `document` compared as the reader sees them: a line diff with
    the changed words marked; a spreadsheet by its shown values."""
    def lines(version) -> list[str]:
        return shown_lines({"kind": document.kind, "format": getattr(document, "format", ""),
                            "content": version.content, "metadata": version.metadata})

    is_sheet = document.kind == DocumentKind.FILE and getattr(document, "format", "") == "xlsx"
    diff = line_diff_marked(lines(old), lines(new))
    return {"old": old, "new": new, "is_sheet": is_sheet, **diff,
            "values_only": is_sheet and not diff["changed"] and old.content != new.content}


# --- Rubric ------------------------------------------------------------------------------------------

SETTINGS = (("pass_threshold", "Pass threshold"), ("all_must_pass", "All criteria must pass"), ("judge_samples", "Judge samples"))


def _label(choices, value: str) -> str:
    return choices(value).label if value in choices.values else value


def _criterion(c: Criterion, number: int | None) -> dict:
    return {"number": number, "text": c.text, "points": c.points, "tag": c.tag, "tag_label": _label(CriterionTag, c.tag),
            "grader_label": _label(GraderKind, c.grader_kind), "grader_config": c.grader_config}


def _unrelated(old: str, new: str) -> bool:
    """Two criterion texts with little in common (under 40% of their words)."""
    if old == new:
        return False
    return difflib.SequenceMatcher(None, old.lower().split(), new.lower().split(), autojunk=False).ratio() < 0.4


def rubric_versions_diff(*, old: RubricVersion, new: RubricVersion) -> dict:
    """The criteria added, removed and changed (text word by word, points, tag, grader) from
    `old` to `new`, paired as verification.versions pairs them (same text and points, then the
    same text, then the same position; a criterion paired by position whose text has nothing
alike reads as one removed and one added), and the grading settings that changed."""
    old_criteria, new_criteria = list(old.criteria.all()), list(new.criteria.all())
    pairs = pair_items(old_criteria, new_criteria, ident=lambda c: c.pk,
                       keys=(lambda c: (c.text, c.points), lambda c: c.text, lambda c: c.position))
    added, removed, changed, unchanged = [], [], [], 0
    for pair in pairs:
        if pair.old is None:
            added.append(_criterion(pair.new, pair.new_number))
        elif pair.new is None:
            removed.append(_criterion(pair.old, pair.old_number))
        elif _unrelated(pair.old.text, pair.new.text):  # paired only by position, nothing alike: say so plainly
            removed.append(_criterion(pair.old, pair.old_number))
            added.append(_criterion(pair.new, pair.new_number))
        else:
            o, n = pair.old, pair.new
            flags = {"text_changed": o.text != n.text, "points_changed": o.points != n.points, "tag_changed": o.tag != n.tag,
                     "grader_changed": o.grader_kind != n.grader_kind or o.grader_config != n.grader_config}
            if not any(flags.values()):
                unchanged += 1
                continue
            changed.append({"old": _criterion(o, pair.old_number), "new": _criterion(n, pair.new_number),
                            "text": text_diff(o.text, n.text) if flags["text_changed"] else None, **flags})
    def shown(value: object) -> str:
        return ("Yes" if value else "No") if isinstance(value, bool) else str(value)

    settings = [{"name": label, "old": shown(getattr(old, field)), "new": shown(getattr(new, field))}
                for field, label in SETTINGS if getattr(old, field) != getattr(new, field)]
    return {"old": old, "new": new, "added": added, "removed": removed, "changed": changed, "unchanged": unchanged,
            "settings": settings, "nothing_changed": not (added or removed or changed or settings)}
