"""Consistency check: where does the data room state a fact from the facts sheet with a
different value?

For each fact we look, in every document, at the text right after each mention of the
fact's name ("purchase price of $15m"), read the first value of the same type as the
fact's own value (an amount, a percentage, a date, a number or a proper name), and
report it when it differs. A heuristic, built to find the contradictions that matter
(amounts, dates, parties), not to prove the room consistent.
"""

import re
from dataclasses import dataclass
from datetime import date

from dateutil import parser as date_parser

WINDOW = 80
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mm": 1e6, "mn": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9, "billion": 1e9}
MONEY = re.compile(r"(?:[$€£]|USD|EUR|GBP)\s?(\d[\d,]*(?:\.\d+)?)\s*(k|m|mm|mn|b|bn|thousand|million|billion)?\b", re.I)
PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s?%")
NUMBER = re.compile(r"\b(\d[\d,]*(?:\.\d+)?)\b")
DATE = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{4}|"
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{1,2},? \d{4})\b"
)
_NOT_NAMES = {
    "The",
    "This",
    "That",
    "These",
    "A",
    "An",
    "In",
    "On",
    "At",
    "Our",
    "We",
    "It",
    "Its",
    "As",
    "Is",
    "Will",
    "Shall",
    "And",
    "Of",
}
NAME = re.compile(r"\b([A-Z][\w&.'-]*(?:\s+(?:[A-Z][\w&.'-]*|of|and|&))*)")


@dataclass(frozen=True)
class Mismatch:
    fact_key: str
    fact_value: str
    document_id: int
    document_path: str
    found: str
    snippet: str


def _money(text: str) -> float | None:
    match = MONEY.search(text)
    if not match:
        return None
    return float(match.group(1).replace(",", "")) * _SCALE.get((match.group(2) or "").lower(), 1)


def _date(text: str) -> date | None:
    match = DATE.search(text)
    if not match:
        return None
    try:
        return date_parser.parse(match.group(1)).date()
    except (ValueError, OverflowError):
        return None


def _kind_of(value: str) -> str:
    if MONEY.search(value):
        return "money"
    if PERCENT.search(value):
        return "percent"
    if _date(value):
        return "date"
    if NUMBER.fullmatch(value.strip()):
        return "number"
    if NAME.match(value.strip()):
        return "name"
    return "text"


def _read(kind: str, text: str) -> tuple[object, str] | None:
    """The first value of `kind` in text, normalised, with its original spelling."""
    if kind == "money":
        match = MONEY.search(text)
        return (_money(match.group(0)), match.group(0)) if match else None
    if kind == "percent":
        match = PERCENT.search(text)
        return (float(match.group(1)), match.group(0)) if match else None
    if kind == "date":
        match = DATE.search(text)
        return (_date(match.group(0)), match.group(0)) if match else None
    if kind == "number":
        match = NUMBER.search(text)
        return (float(match.group(1).replace(",", "")), match.group(0)) if match else None
    if kind == "name":
        for match in NAME.finditer(text):
            words = match.group(1).split()
            while words and words[0] in _NOT_NAMES:
                words = words[1:]
            if words:
                name = " ".join(words)
                return name.lower(), name
        return None
    return None


def find_mismatches(facts: list[dict], documents: list[tuple[int, str, str]]) -> list[Mismatch]:
    """`documents` are (id, path, text) triples; text should include metadata values."""
    found: list[Mismatch] = []
    for fact in facts:
        key, value = fact["key"].strip(), fact["value"].strip()
        kind = _kind_of(value)
        expected = _read(kind, value)
        if not key or expected is None:
            continue
        pattern = re.compile(re.escape(key), re.I)
        for doc_id, path, text in documents:
            for mention in pattern.finditer(text):
                window = text[mention.end() : mention.end() + WINDOW]
                actual = _read(kind, window)
                if actual is None or actual[0] == expected[0]:
                    continue
                if kind == "name" and (expected[0] in actual[0] or actual[0] in expected[0]):
                    continue
                start = max(mention.start() - 30, 0)
                snippet = " ".join(text[start : mention.end() + WINDOW].split())
                found.append(Mismatch(key, value, doc_id, path, actual[1], snippet))
                break
    return found
