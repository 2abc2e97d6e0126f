"""What changed between two submissions of the same task: the prompt and reference answer
word by word, the rubric's criteria (paired as verification.versions pairs them, so a
rewritten criterion reads as changed, not as one removed and one added), the rubric's
grading settings, the task's input files (by path and sha256), and the world: its outline,
facts and documents (added, removed, moved, changed, each changed one with its line diff, a
spreadsheet compared by the values it shows).

Every piece of text here is user text: the HTML this module builds escapes all of it and
adds only <ins> and <del>."""

from authoring.diffs import shown_lines
from authoring.models import Criterion, CriterionTag, DocumentKind, GraderKind
from core.textdiff import CONTEXT_LINES, MAX_DIFF_LINES, MAX_WORD_TOKENS, TOKEN, line_diff, segments_html, text_diff
from reviews.models import Submission
from verification.versions import criteria_pairs

__all__ = ["CONTEXT_LINES", "MAX_DIFF_LINES", "MAX_WORD_TOKENS", "TOKEN", "line_diff", "segments_html", "shown_lines",
           "submission_diff", "text_diff"]


# --- Documents ---------------------------------------------------------------------------------------

FORMAT_LABELS = {"docx": "Word document", "xlsx": "Spreadsheet", "pptx": "Slides", "pdf": "PDF", "md": "Markdown", "csv": "CSV table"}


def document_type(kind: str, fmt: str) -> str:
    """What a reader calls the document: "Spreadsheet", "Email"…"""
    if kind == DocumentKind.FILE:
        return FORMAT_LABELS.get(fmt, (fmt or "file").upper())
    return dict(DocumentKind.choices).get(kind, kind)


def document_anchor(path: str) -> str:
    """The id of a document's entry on the review page (reviews/_evidence.html)."""
    return "evidence-doc-" + "".join(ch if ch.isalnum() else "-" for ch in path).strip("-").lower()


def _document_changes(old_docs: list[dict], new_docs: list[dict]) -> dict:
    before = {d["path"]: d for d in old_docs}
    after = {d["path"]: d for d in new_docs}
    added = [d for p, d in after.items() if p not in before]
    removed = [d for p, d in before.items() if p not in after]
    # A document moved to another folder keeps its content: say so rather than "removed" and "added".
    moved = []
    for doc in list(added):
        twin = next((r for r in removed if r.get("kind") == doc.get("kind") and r.get("content") == doc.get("content")
                     and (r.get("content") or "").strip()), None)
        if twin is not None:
            moved.append({"old_path": twin["path"], "path": doc["path"], "kind": doc.get("kind")})
            added.remove(doc)
            removed.remove(twin)
    changed, unchanged = [], 0
    for path, new in after.items():
        old = before.get(path)
        if old is None:
            continue
        if all(old.get(k) == new.get(k) for k in ("kind", "format", "content", "metadata")):
            unchanged += 1
            continue
        diff = line_diff(shown_lines(old), shown_lines(new))
        changed.append({"path": path, "kind": new.get("kind"), "format": new.get("format", ""), "anchor": document_anchor(path), **diff,
                        "format_changed": (old.get("format"), new.get("format")) if old.get("format") != new.get("format") else None,
                        "values_only": new.get("format") == "xlsx" and not diff["lines"],
                        "was_empty": not (old.get("content") or "").strip()})
    def entry(d: dict) -> dict:
        return {"path": d["path"], "kind": d.get("kind"), "format": d.get("format", ""), "anchor": document_anchor(d["path"]),
                "type": document_type(d.get("kind", ""), d.get("format", ""))}

    return {"added": [entry(d) for d in added], "removed": [entry(d) for d in removed],
            "moved": moved, "changed": changed, "unchanged": unchanged,
            "any": bool(added or removed or moved or changed)}


def _fact_changes(old: list[dict], new: list[dict]) -> list[dict]:
    before = {f.get("key", ""): f.get("value", "") for f in old or []}
    after = {f.get("key", ""): f.get("value", "") for f in new or []}
    rows = [{"key": k, "kind": "added", "new": v} for k, v in after.items() if k not in before]
    rows += [{"key": k, "kind": "removed", "old": v} for k, v in before.items() if k not in after]
    rows += [{"key": k, "kind": "changed", "old": before[k], "new": v} for k, v in after.items() if k in before and before[k] != v]
    return rows


def _input_file_changes(old: list[dict], new: list[dict]) -> dict:
    """The task's input files, by path: added, removed, and changed (other bytes)."""
    before = {f["path"]: f for f in old or []}
    after = {f["path"]: f for f in new or []}
    changed = [{"path": p, "old_size": before[p]["size"], "size": f["size"]} for p, f in after.items()
               if p in before and before[p]["sha256"] != f["sha256"]]
    added = [f for p, f in after.items() if p not in before]
    removed = [f for p, f in before.items() if p not in after]
    return {"added": added, "removed": removed, "changed": changed, "any": bool(added or removed or changed)}


# --- Rubric --------------------------------------------------------------------------------------------

def _criterion(c: Criterion, number: int | None) -> dict:
    return {"number": number, "text": c.text, "points": c.points, "tag": c.tag, "tag_label": CriterionTag(c.tag).label
            if c.tag in CriterionTag.values else c.tag, "grader_label": GraderKind(c.grader_kind).label
            if c.grader_kind in GraderKind.values else c.grader_kind}


def _criteria_changes(old: list[Criterion], new: list[Criterion]) -> dict:
    added, removed, changed, unchanged = [], [], [], 0
    for pair in criteria_pairs(old, new):
        if pair.old is None:
            added.append(_criterion(pair.new, pair.new_number))
            continue
        if pair.new is None:
            removed.append(_criterion(pair.old, pair.old_number))
            continue
        o, n = pair.old, pair.new
        grader_changed = o.grader_kind != n.grader_kind or o.grader_config != n.grader_config
        if pair.kind == "same" and o.tag == n.tag and not grader_changed:
            unchanged += 1
            continue
        changed.append({
            "old": _criterion(o, pair.old_number), "new": _criterion(n, pair.new_number),
            "text": text_diff(o.text, n.text) if pair.text_changed else None,
            "points_changed": pair.points_changed, "tag_changed": o.tag != n.tag, "grader_changed": grader_changed,
        })
    return {"added": added, "removed": removed, "changed": changed, "unchanged": unchanged, "any": bool(added or removed or changed)}


SETTINGS = (("pass_threshold", "Pass threshold"), ("all_must_pass", "All criteria must pass"), ("judge_samples", "Judge samples"))


def _settings_changes(previous: Submission, current: Submission) -> list[dict]:
    old, new = previous.rubric_version, current.rubric_version
    return [{"name": label, "old": getattr(old, field), "new": getattr(new, field)}
            for field, label in SETTINGS if getattr(old, field) != getattr(new, field)]


# --- The whole ----------------------------------------------------------------------------------------

def _as_read(text: str) -> str:
    """Text as a reader sees it: line ends and trailing space are no change (a page save
    sent CRLF and dropped the final newline: the reviewer saw "changed" for nothing)."""
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")).strip("\n")


def submission_diff(*, previous: Submission, current: Submission) -> dict:
    """What changed from `previous` to `current` (two versions of one task, both read by the
    caller through an access-scoped selector)."""
    old, new = previous.snapshot, current.snapshot
    fields = []
    for section, key, label in (("task", "title", "Title"), ("task", "prompt", "Prompt"), ("task", "reference_answer", "Reference answer"),
                                ("task", "deliverable_kind", "Deliverable"), ("world", "outline", "World outline")):
        a, b = (_as_read(str(snapshot.get(section, {}).get(key) or "")) for snapshot in (old, new))
        if a != b:
            fields.append({"key": key, "label": label, "diff": text_diff(a, b)})
    if previous.rubric_version_id == current.rubric_version_id:
        criteria = {"added": [], "removed": [], "changed": [], "any": False,
                    "unchanged": len(new.get("rubric", {}).get("criteria", []))}
        settings = []
    else:
        criteria = _criteria_changes(list(previous.rubric_version.criteria.all()), list(current.rubric_version.criteria.all()))
        settings = _settings_changes(previous, current)
    documents = _document_changes(old.get("world", {}).get("documents", []), new.get("world", {}).get("documents", []))
    facts = _fact_changes(old.get("world", {}).get("facts", []), new.get("world", {}).get("facts", []))
    input_files = _input_file_changes(old.get("task", {}).get("input_files", []), new.get("task", {}).get("input_files", []))
    return {
        "previous_number": previous.number, "current_number": current.number, "previous": previous,
        "old_rubric_number": old.get("rubric", {}).get("version"), "new_rubric_number": new.get("rubric", {}).get("version"),
        "fields": fields, "criteria": criteria, "settings": settings, "documents": documents, "facts": facts,
        "input_files": input_files,
        "nothing_changed": not (fields or criteria["any"] or settings or documents["any"] or facts or input_files["any"]),
    }
