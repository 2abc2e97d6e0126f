"""Plausible wrong values for a fact, written the way the reference writes it (its currency,
unit, scale word, decimals, thousands separators, date format): what a hedge lists beside the
right value and what a near miss puts in its place. Pure functions."""

import calendar
import re
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from verification.probes.facts import COUNTERPART, DURATION_STEPS, MONTH_ABBR, MONTHS, NUMBER_WORDS, WORDS_OF, Fact, extract_facts


def alternatives(fact: Fact, count: int, *, near: bool = False, context: str = "") -> list[str]:
    """`count` plausible wrong values for a fact, written as the reference writes it; with
    `near`, the closest wrong one first (a number about a tenth off, a date a week later, a
    deadline one step longer, the next clause). A party is swapped for its counterpart (the
    Buyer for the Seller) or for another party the `context` names."""
    if fact.kind in ("amount", "percent", "quantity", "number"):
        return _numbers(fact, count, near)
    if fact.kind == "duration":
        return _durations(fact, count)
    if fact.kind == "date":
        return _dates(fact, count)
    if fact.kind == "clause":
        return _clauses(fact, count)
    if fact.kind == "party":
        return _parties(fact, count, context)
    return []


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None


def _format_number(value: Decimal, like: str) -> str:
    decimals = len(like.split(".")[1]) if "." in like else 0
    quantum = Decimal(1).scaleb(-decimals)
    rounded = value.quantize(quantum, rounding=ROUND_HALF_UP)
    grouped = "," in like or (abs(rounded) >= 10000 and "," in like)
    return f"{rounded:,.{decimals}f}" if grouped else f"{rounded:.{decimals}f}"


def _numbers(fact: Fact, count: int, near: bool) -> list[str]:
    prefix, number, suffix = fact.parts[:3]
    value = _decimal(number)
    if value is None:
        return []
    factors = [Decimal("1.1"), Decimal("0.9"), Decimal("1.25"), Decimal("0.8"), Decimal("1.5"), Decimal("2"), Decimal("0.5")]
    step = Decimal(1).scaleb(-(len(number.split(".")[1]) if "." in number else 0))
    candidates = [value * f for f in factors] + [value + step, value - step, value + 2 * step, value + 3 * step]
    if not near:
        candidates = [value * Decimal("0.9"), value * Decimal("1.1"), value * Decimal("1.25"), *candidates]
    found: list[str] = []
    for candidate in candidates:
        if candidate <= 0:
            continue
        text = _format_number(candidate, number)
        if text != number and _decimal(text) != value and text not in found:
            found.append(text)
        if len(found) == count:
            break
    return [f"{prefix}{text}{suffix}" for text in found]


def _durations(fact: Fact, count: int) -> list[str]:
    _, number, suffix, unit = fact.parts
    as_word = number.lower() in NUMBER_WORDS
    value = NUMBER_WORDS[number.lower()] if as_word else int(number)
    steps = DURATION_STEPS.get(unit, [1, 2, 3, 5, 10])
    later = [s for s in steps if s > value]
    earlier = [s for s in reversed(steps) if s < value]
    order = [*later[:1], *earlier[:1], *later[1:2], *earlier[1:2], *later[2:], *earlier[2:]] or [value + 1, value + 2]
    found = []
    for new in order[:count]:
        written = WORDS_OF.get(new, str(new)) if as_word else str(new)
        if as_word and number[:1].isupper():
            written = written.capitalize()
        plural = suffix
        if new == 1:
            plural = re.sub(r"s('?)$", r"\1", suffix)
        elif not re.search(r"s'?$", suffix):
            plural = re.sub(r"('?)$", r"s\1", suffix, count=1)
        found.append(f"{written}{plural}")
    return found


def _dates(fact: Fact, count: int) -> list[str]:
    value, style = fact.parts
    found = []
    for days in (7, -7, 30, -30, 14):
        new = value + timedelta(days=days)
        if not style["year"] and new.year != value.year:
            continue  # no year written: stay within it
        text = _format_date(new, style)
        if text != fact.text and text not in found:
            found.append(text)
        if len(found) == count:
            break
    return found


def _format_date(value: date, style: dict) -> str:
    if style["order"] == "iso":
        return value.isoformat()
    if style["order"] == "slash":
        return f"{value.day:02d}/{value.month:02d}/{value.year}" if style["padded"] else f"{value.day}/{value.month}/{value.year}"
    written = style["month"].rstrip(".")
    abbreviated = written in MONTH_ABBR.split("|") and written not in MONTHS.split("|")
    month = (calendar.month_abbr if abbreviated else calendar.month_name)[value.month]
    if abbreviated and written == "Sept" and value.month == 9:
        month = "Sept"
    day = f"{value.day}{_ordinal(value.day)}" if style["ordinal"] else str(value.day)
    if style["order"] == "dmy":
        return f"{day} {month}" + (f" {value.year}" if style["year"] else "")
    return f"{month} {day}, {value.year}"


def _ordinal(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _clauses(fact: Fact, count: int) -> list[str]:
    prefix, number, _ = fact.parts
    head = re.match(r"\d+[A-Z]?(?:\.\d+)*", number).group(0)
    tail = number[len(head):]
    pieces = head.split(".")
    found = []

    def bump(index: int, by: int) -> None:
        digits = re.match(r"\d+", pieces[index]).group(0)
        new = int(digits) + by
        if new < 1:
            return
        changed = [*pieces]
        changed[index] = str(new) + pieces[index][len(digits):]
        text = prefix + ".".join(changed) + tail
        if text != fact.text and text not in found:
            found.append(text)

    last = len(pieces) - 1
    for index, by in ((last, 1), (last, -1), (0, 1), (last, 2), (0, -1)):
        bump(index, by)
    return found[:count]


def _parties(fact: Fact, count: int, context: str) -> list[str]:
    name, kind = fact.parts
    if kind == "quoted":
        return []  # the definition itself ("the “Buyer”"): its uses are swapped instead
    found = []
    if kind == "role" and COUNTERPART.get(name):
        found.append(f"the {COUNTERPART[name]}")
    for other in extract_facts(context) if context else []:
        if other.kind != "party" or other.parts[1] == "quoted" or other.parts[0] == name:
            continue
        text = other.text if other.parts[1] == "name" else f"the {other.parts[0]}"
        if text.lower() not in {f.lower() for f in found} and text.lower() != fact.text.lower():
            found.append(text)
    if kind == "role":
        found = [f[:1].upper() + f[1:] if fact.text[:1].isupper() else f for f in found]
    return found[:count]


def sort_value(kind: str, text: str) -> object:
    """A value to put a fact and its alternatives in order (a hedge lists them so)."""
    if kind in ("amount", "percent", "quantity", "number", "duration"):
        match = re.search(r"\d[\d,]*(?:\.\d+)?", text)
        if match:
            return float(match.group(0).replace(",", ""))
        word = text.split()[0].lower()
        return float(NUMBER_WORDS.get(word, 0))
    return 0.0
