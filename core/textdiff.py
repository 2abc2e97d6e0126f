"""Generic text comparison, no Django models: a word diff of two texts, a line diff with
context, a line diff with word-level marks inside the changed lines, and the pairing of two
ordered lists of items (e.g. the criteria of two rubric versions).

Every piece of text here is user text: the HTML this module builds escapes all of it and
adds only <ins> and <del>."""

import difflib
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
# Inside a changed line a number keeps its separators ("1,500.25" is one word), so a changed
# amount reads as one changed value, not as a changed fragment of it.
LINE_TOKEN = re.compile(r"\s+|\d+(?:[.,]\d+)*\w*|\w+|[^\w\s]")
# A word diff is quadratic at worst: past this many tokens a side, the text is compared line by line.
MAX_WORD_TOKENS = 6_000
MAX_DIFF_LINES = 400
CONTEXT_LINES = 2
# Word marks inside a changed line only when the line is short enough to compare word by word.
MAX_LINE_TOKENS = 600


def _segments(old: list[str], new: list[str]) -> list[tuple[str, str]]:
    """(op, text) runs, op in equal | del | ins, adjacent runs of one op merged."""
    runs: list[tuple[str, str]] = []

    def put(op: str, parts: list[str]) -> None:
        text = "".join(parts)
        if not text:
            return
        if runs and runs[-1][0] == op:
            runs[-1] = (op, runs[-1][1] + text)
        else:
            runs.append((op, text))

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            put("equal", old[i1:i2])
        else:
            put("del", old[i1:i2])
            put("ins", new[j1:j2])
    return runs


def segments_html(segments: list[tuple[str, str]]) -> SafeString:
    """The runs as HTML: every run escaped, removed text in <del>, added text in <ins>."""
    html = "".join(f"<{op}>{escape(text)}</{op}>" if op in ("ins", "del") else str(escape(text)) for op, text in segments)
    return mark_safe(html)  # noqa: S308 - every run is escaped above; the only tags are ours


def text_diff(old: str, new: str) -> dict:
    """A word diff of two texts (line by line for long ones): `segments` (op, text) for a
    template to mark up, `html` the same already marked up and escaped."""
    old, new = old or "", new or ""
    a, b = TOKEN.findall(old), TOKEN.findall(new)
    if len(a) > MAX_WORD_TOKENS or len(b) > MAX_WORD_TOKENS:
        a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    segments = _segments(a, b)
    return {"changed": old != new, "segments": segments, "html": segments_html(segments),
            "added": sum(len(t.split()) for op, t in segments if op == "ins"),
            "removed": sum(len(t.split()) for op, t in segments if op == "del")}


def line_diff(old: list[str], new: list[str]) -> dict:
    """Changed lines with a little context: `lines` as (css class, text) with class add | del
    | context | gap, capped at MAX_DIFF_LINES (`hidden` says how many more)."""
    rows: list[tuple[str, str]] = []
    for n, line in enumerate(difflib.unified_diff(old, new, lineterm="", n=CONTEXT_LINES)):
        if n < 2:  # the ---/+++ header
            continue
        if line.startswith("@@"):
            rows.append(("gap", "…"))
        else:
            rows.append(({"+": "add", "-": "del"}.get(line[:1], "context"), line[1:]))
    if rows and rows[0][0] == "gap":
        rows = rows[1:]
    return {"lines": rows[:MAX_DIFF_LINES], "hidden": max(len(rows) - MAX_DIFF_LINES, 0),
            "added": sum(1 for c, _ in rows if c == "add"), "removed": sum(1 for c, _ in rows if c == "del")}


def _marked_pair(old: str, new: str) -> tuple[SafeString, SafeString]:
    """One changed line before and after, each escaped, with the words that differ marked:
    <del> in the old line, <ins> in the new one."""
    a, b = LINE_TOKEN.findall(old), LINE_TOKEN.findall(new)
    if len(a) > MAX_LINE_TOKENS or len(b) > MAX_LINE_TOKENS:
        return segments_html([("del", old)]), segments_html([("ins", new)])
    segments = _segments(a, b)
    before = segments_html([(op, t) for op, t in segments if op != "ins"])
    after = segments_html([(op, t) for op, t in segments if op != "del"])
    return before, after


def line_diff_marked(old: list[str], new: list[str]) -> dict:
    """A line diff for reading: `lines` as (css class, old number, new number, html) with class
    add | del | context | gap; a line rewritten in place shows as its old and new line with the
    changed words marked (<del>/<ins>) inside them. Escaped; capped at MAX_DIFF_LINES."""
    rows: list[tuple[str, int | None, int | None, SafeString]] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        if rows:
            rows.append(("gap", None, None, mark_safe("…")))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [("context", i + 1, j1 + k + 1, escape(old[i])) for k, i in enumerate(range(i1, i2))]
                continue
            paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
            dels, adds = [], []
            for k in range(paired):
                before, after = _marked_pair(old[i1 + k], new[j1 + k])
                dels.append(("del", i1 + k + 1, None, before))
                adds.append(("add", None, j1 + k + 1, after))
            dels += [("del", i + 1, None, segments_html([("del", old[i])])) for i in range(i1 + paired, i2)]
            adds += [("add", None, j + 1, segments_html([("ins", new[j])])) for j in range(j1 + paired, j2)]
            rows += dels + adds
    return {"lines": rows[:MAX_DIFF_LINES], "hidden": max(len(rows) - MAX_DIFF_LINES, 0),
            "added": sum(1 for r in rows if r[0] == "add"), "removed": sum(1 for r in rows if r[0] == "del"),
            "changed": old != new}


@dataclass
class Pair:
    old: Any
    new: Any
    old_number: int | None  # 1..n in each list
    new_number: int | None


def pair_items(old: Sequence[Any], new: Sequence[Any], *, keys: Sequence[Callable[[Any], Hashable]],
               ident: Callable[[Any], Hashable] = id) -> list[Pair]:
    """Two ordered lists paired up: for each key in turn (the strictest first), each unpaired
    new item takes the first unpaired old item with the same key. In the new list's order;
    the old items left over (removed) last."""
    old_numbers = {ident(o): n for n, o in enumerate(old, start=1)}
    left = list(old)
    matched: dict[Hashable, Any] = {}
    for key in keys:
        for item in new:
            if ident(item) in matched:
                continue
            found = next((o for o in left if key(o) == key(item)), None)
            if found is not None:
                matched[ident(item)] = found
                left.remove(found)
    pairs = [Pair(old=matched.get(ident(item)), new=item,
                  old_number=old_numbers[ident(matched[ident(item)])] if ident(item) in matched else None, new_number=n)
             for n, item in enumerate(new, start=1)]
    pairs += [Pair(old=o, new=None, old_number=old_numbers[ident(o)], new_number=None) for o in left]
    return pairs
