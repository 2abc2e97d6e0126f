"""A document's text cut into passages: the sentences of its paragraphs and list items, and
the rows of its tables. A fact is read inside one passage, and the passage is what a finding
shows as evidence, so an expert sees the whole sentence (or row) that states the value.
"""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    text: str
    is_table_row: bool = False


_TABLE_RULE = re.compile(r"^\|?\s*:?-{2,}")
_ITEM_START = re.compile(r"^\s*(?:#{1,6}\s|[-*•]\s|\d+(?:\.\d+)*[.)]?\s|\([a-z0-9]{1,4}\)\s|[A-Z][\w ]{0,30}:\s)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
# A sentence ends at . ! or ? followed by space and a capital, a quote or a bracket; not after
# a legal abbreviation (Inc., Ltd., No., cl.) or a single initial.
_ABBREVIATIONS = {"inc", "ltd", "co", "corp", "no", "nos", "cl", "para", "paras", "art", "sch", "mr", "mrs", "ms", "dr",
                  "st", "e.g", "i.e", "etc", "vs", "v", "u.s", "plc", "llp", "l.p", "s.a", "b.v", "n.v", "approx", "jr"}
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”’)]?\s+(?=[A-Z\"“(\[])")
_HEADING = re.compile(r"^(?:\d+(?:\.\d+)*\.?\s+)?(?:[A-Z][\w'’-]*)(?:\s+[\w'’-]+){0,3}\.$")


def clean(text: str) -> str:
    """Markdown emphasis out and whitespace collapsed: the text a passage shows."""
    return " ".join(_EMPHASIS.sub("", text).split())


def _blocks(text: str) -> list[tuple[str, bool]]:
    """Paragraphs and list items (wrapped lines joined) and table rows, in order."""
    blocks: list[tuple[str, bool]] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            blocks.append((" ".join(current), False))
            current.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            flush()
        elif stripped.startswith("|"):
            flush()
            if not _TABLE_RULE.match(stripped):
                cells = [c.strip() for c in stripped.strip("|").split("|")]
                blocks.append((" | ".join(c for c in cells if c), True))
        elif _ITEM_START.match(line) or stripped.startswith("#"):
            flush()
            current.append(stripped.lstrip("#").strip())
        else:
            current.append(stripped)
    flush()
    return blocks


def _sentences(block: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(block):
        before = block[start : match.start()].rstrip("\"”’)")
        last_word = before.rsplit(None, 1)[-1].rstrip(".").lower() if before.split() else ""
        if last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha()) or re.fullmatch(r"[\d.]+", last_word):
            continue  # "Acme Inc. The …", "clause 4. The …", "J. Smith"
        pieces.append(block[start : match.start() + len(match.group(0))].strip())
        start = match.end()
    pieces.append(block[start:].strip())
    # A short run-in heading ("2. Price.", "Governing law.") belongs to the sentence after it.
    merged: list[str] = []
    for piece in pieces:
        if merged and _HEADING.match(merged[-1]):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return [p for p in merged if p]


def passages(text: str) -> list[Passage]:
    found: list[Passage] = []
    for block, is_row in _blocks(text):
        if is_row:
            found.append(Passage(clean(block), is_table_row=True))
        else:
            found.extend(Passage(clean(sentence)) for sentence in _sentences(block))
    return [p for p in found if p.text]
