"""Typed values read out of text, each normalised so that two spellings of the same value
compare equal: $12m = $12,000,000 = USD 12 million; 31 March 2026 = 2026-03-31 =
March 31, 2026; six weeks = 42 days; English law = England and Wales.

Every reader returns `Value`s with their span in the text, so a finding can highlight the
exact words. The readers are deliberately strict: a value we are unsure of is not read at
all, because a missed value costs nothing and a misread one is a false alarm.
"""

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from dateutil import parser as date_parser


class Kind(StrEnum):
    AMOUNT = "amount"
    DATE = "date"
    PERCENT = "percent"
    DURATION = "duration"
    JURISDICTION = "jurisdiction"
    PARTY = "party"


@dataclass(frozen=True)
class Value:
    kind: Kind
    normal: object  # comparable: (currency, Decimal), date, Decimal, (unit, Decimal), str, PartyName
    text: str  # as written
    start: int
    end: int

    @property
    def label(self) -> str:
        """The normalised value in words an expert reads at a glance (a party: its name as written)."""
        return self.text if self.kind == Kind.PARTY else describe(self.kind, self.normal)


# --- Numbers ----------------------------------------------------------------------------

_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
NUMBER_WORDS: dict[str, int] = {word: n for n, word in enumerate(_UNITS)} | _TENS | {"a hundred": 100, "one hundred": 100}
for _tens_word, _tens in _TENS.items():
    for _n in range(1, 10):
        NUMBER_WORDS[f"{_tens_word}-{_UNITS[_n]}"] = _tens + _n
        NUMBER_WORDS[f"{_tens_word} {_UNITS[_n]}"] = _tens + _n
_WORDS = "|".join(sorted((re.escape(w) for w in NUMBER_WORDS), key=len, reverse=True))


def _decimal(digits: str) -> Decimal | None:
    try:
        return Decimal(digits.replace(",", ""))
    except InvalidOperation:
        return None


def _number(token: str) -> Decimal | None:
    token = token.strip().lower()
    if token in NUMBER_WORDS:
        return Decimal(NUMBER_WORDS[token])
    return _decimal(token)


# --- Amounts ----------------------------------------------------------------------------

_CURRENCY_PREFIX = {
    "us$": "USD", "u.s.$": "USD", "usd": "USD", "$": "USD", "€": "EUR", "eur": "EUR", "£": "GBP", "gbp": "GBP",
    "chf": "CHF", "¥": "JPY", "jpy": "JPY", "c$": "CAD", "cad": "CAD", "a$": "AUD", "aud": "AUD",
}
_CURRENCY_SUFFIX = {
    "usd": "USD", "us dollars": "USD", "dollars": "USD", "eur": "EUR", "euros": "EUR", "euro": "EUR", "gbp": "GBP",
    "pounds sterling": "GBP", "pounds": "GBP", "sterling": "GBP", "chf": "CHF", "swiss francs": "CHF",
}
_SCALES = {"k": 10**3, "thousand": 10**3, "m": 10**6, "mm": 10**6, "mn": 10**6, "million": 10**6,
           "b": 10**9, "bn": 10**9, "billion": 10**9}
_SCALE = r"(?:\s?(?P<scale>thousand|million|billion|mm|mn|bn|[kmb])\b)?"
_PREFIX = "|".join(re.escape(c) for c in sorted(_CURRENCY_PREFIX, key=len, reverse=True))
_SUFFIX = "|".join(re.escape(c) for c in sorted(_CURRENCY_SUFFIX, key=len, reverse=True))
_AMOUNT_PREFIX = re.compile(rf"(?<![\w$])(?P<cur>{_PREFIX})\s?(?P<num>\d[\d,]*(?:\.\d+)?){_SCALE}", re.I)
_AMOUNT_SUFFIX = re.compile(rf"(?<![\w$.,])(?P<num>\d[\d,]*(?:\.\d+)?){_SCALE}\s?(?P<cur>{_SUFFIX})\b", re.I)


def amounts(text: str) -> list[Value]:
    found: list[Value] = []
    for pattern, table in ((_AMOUNT_PREFIX, _CURRENCY_PREFIX), (_AMOUNT_SUFFIX, _CURRENCY_SUFFIX)):
        for match in pattern.finditer(text):
            if any(v.start <= match.start() < v.end for v in found):
                continue
            number = _decimal(match.group("num"))
            if number is None:
                continue
            scale = _SCALES.get((match.group("scale") or "").lower(), 1)
            currency = table[match.group("cur").lower()]
            found.append(Value(Kind.AMOUNT, (currency, number * scale), match.group(0), match.start(), match.end()))
    return sorted(found, key=lambda v: v.start)


# --- Percentages ------------------------------------------------------------------------

_PERCENT = re.compile(rf"(?<![\w.])(?P<num>\d+(?:\.\d+)?|{_WORDS})\s?(?:%|per ?cent\b|percent\b)", re.I)


def percents(text: str) -> list[Value]:
    found = []
    for match in _PERCENT.finditer(text):
        number = _number(match.group("num"))
        if number is not None:
            found.append(Value(Kind.PERCENT, number, match.group(0), match.start(), match.end()))
    return found


# --- Dates ------------------------------------------------------------------------------

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
          r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_DATE = re.compile(
    rf"\b(?:\d{{4}}-(?:0[1-9]|1[0-2])-(?:[12]\d|3[01]|0[1-9])(?![\d:T])"
    rf"|{_DAY}\s+(?:of\s+)?{_MONTH},?\s+\d{{4}}"
    rf"|{_MONTH}\s+{_DAY},?\s+\d{{4}})\b",
    re.I,
)


def dates(text: str) -> list[Value]:
    found = []
    for match in _DATE.finditer(text):
        try:
            parsed = date_parser.parse(match.group(0).replace(" of ", " "), dayfirst=True).date()
        except (ValueError, OverflowError):
            continue
        found.append(Value(Kind.DATE, parsed, match.group(0), match.start(), match.end()))
    return found


# --- Durations --------------------------------------------------------------------------

# Days and weeks compare with each other, months and years with each other; "60 days" and
# "two months" are not the same length, so they are never compared (nor reported).
_DURATION_UNITS = {"business day": ("business days", 1), "working day": ("business days", 1), "day": ("days", 1),
                   "week": ("days", 7), "month": ("months", 1), "year": ("months", 12)}
_DURATION = re.compile(
    rf"(?<![\w.])(?P<num>\d+(?:\.\d+)?|{_WORDS})(?:\s?\(\d+\))?[\s-](?P<unit>business day|working day|day|week|month|year)s?\b['’]?",
    re.I,
)


def durations(text: str) -> list[Value]:
    found = []
    for match in _DURATION.finditer(text):
        number = _number(match.group("num"))
        if number is None:
            continue
        unit, factor = _DURATION_UNITS[match.group("unit").lower()]
        found.append(Value(Kind.DURATION, (unit, number * factor), match.group(0), match.start(), match.end()))
    return found


# --- Jurisdictions (a closed list) ------------------------------------------------------

JURISDICTIONS: dict[str, str] = {
    "england and wales": "England and Wales", "england & wales": "England and Wales", "english law": "England and Wales",
    "the laws of england": "England and Wales", "england": "England and Wales", "english": "England and Wales",
    "scotland": "Scotland", "scots law": "Scotland", "scottish law": "Scotland", "northern ireland": "Northern Ireland",
    "ireland": "Ireland", "irish law": "Ireland", "new york": "New York", "delaware": "Delaware", "california": "California",
    "texas": "Texas", "germany": "Germany", "german law": "Germany", "france": "France", "french law": "France",
    "switzerland": "Switzerland", "swiss law": "Switzerland", "the netherlands": "Netherlands", "netherlands": "Netherlands",
    "dutch law": "Netherlands", "luxembourg": "Luxembourg", "singapore": "Singapore", "hong kong": "Hong Kong",
    "spain": "Spain", "spanish law": "Spain", "italy": "Italy", "italian law": "Italy", "sweden": "Sweden",
    "swedish law": "Sweden", "japan": "Japan", "japanese law": "Japan", "ontario": "Ontario", "new south wales": "New South Wales",
    "cayman islands": "Cayman Islands", "british virgin islands": "British Virgin Islands", "jersey": "Jersey",
    "guernsey": "Guernsey", "india": "India", "indian law": "India",
}
# The US states by name ("New Jersey" is the state, never Jersey: the longest name matches first).
US_STATES = ("Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware", "District of Columbia",
             "Florida", "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa", "Kansas", "Kentucky", "Louisiana", "Maine",
             "Maryland", "Massachusetts", "Michigan", "Minnesota", "Mississippi", "Missouri", "Montana", "Nebraska", "Nevada",
             "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota", "Ohio", "Oklahoma", "Oregon",
             "Pennsylvania", "Rhode Island", "South Carolina", "South Dakota", "Tennessee", "Texas", "Utah", "Vermont", "Virginia",
             "Washington", "West Virginia", "Wisconsin", "Wyoming")
JURISDICTIONS |= {f"the state of {state.lower()}": state for state in US_STATES} | {state.lower(): state for state in US_STATES}
_JURISDICTION = re.compile(
    r"\b(?:" + "|".join(re.escape(k) for k in sorted(JURISDICTIONS, key=len, reverse=True)) + r")\b", re.I
)


def jurisdictions(text: str) -> list[Value]:
    return [
        Value(Kind.JURISDICTION, JURISDICTIONS[m.group(0).lower()], m.group(0), m.start(), m.end())
        for m in _JURISDICTION.finditer(text)
    ]


READERS = {Kind.AMOUNT: amounts, Kind.DATE: dates, Kind.PERCENT: percents, Kind.DURATION: durations,
           Kind.JURISDICTION: jurisdictions}


def read(kind: Kind, text: str) -> list[Value]:
    return READERS[kind](text)


def first_kind(text: str) -> Kind | None:
    """The kind of the first typed value in a facts-sheet value (for keys we have no role for)."""
    candidates = [(values[0].start, kind) for kind, reader in READERS.items() if kind != Kind.JURISDICTION
                  for values in [reader(text)] if values]
    return min(candidates)[1] if candidates else None


def describe(kind: Kind, normal: object) -> str:
    if kind == Kind.AMOUNT:
        currency, number = normal  # type: ignore[misc]
        return f"{currency} {number.normalize():,f}"
    if kind == Kind.DATE:
        return normal.isoformat()  # type: ignore[attr-defined]
    if kind == Kind.PERCENT:
        return f"{normal.normalize():f}%"  # type: ignore[attr-defined]
    if kind == Kind.DURATION:
        unit, number = normal  # type: ignore[misc]
        return f"{number.normalize():f} {unit}"
    return str(normal)


def same(kind: Kind, a: object, b: object) -> bool | None:
    """True when equal, False when they truly differ, None when they cannot be compared
    (a duration in days against one in months)."""
    if kind == Kind.DURATION and a[0] != b[0]:  # type: ignore[index]
        return None
    if kind == Kind.PARTY:
        return a.matches(b)  # type: ignore[attr-defined]
    return a == b
