"""The facts of a reference answer, found with regular expressions: amount ($48.5 million,
EUR 1,200), percent (12.5 %), quantity (4.6x, 250 mg, 12 kN), date (15 March 2024,
2024-03-15, March 15, 2024), duration (30 days, three months), clause (Section 7.2(b),
clause 21.2, Article 5, § 121), party (defined terms: "the Buyer", Acme Holdings Ltd,
"Target", Dr Lee), number (a bare number, when nothing else is found), and the conclusion (a
yes/no answer that can be reversed: verification.probes.conclusions). Also the sentences and
content words the probes and their fixes compare. Pure functions."""

import calendar
import re
from dataclasses import dataclass
from datetime import date

from verification.probes.conclusions import flip_conclusion

CONCLUSION = "conclusion"
KIND_WORDS = {"amount": "amount", "percent": "percentage", "quantity": "figure", "date": "date", "duration": "period",
              "clause": "clause number", "party": "party", "number": "number", CONCLUSION: "conclusion"}

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_CURRENCY = r"(?:US\$|A\$|C\$|HK\$|S\$|NZ\$|\$|€|£|¥|₹|(?:USD|EUR|GBP|CHF|JPY|CAD|AUD|INR|SEK|NOK|DKK|SGD|HKD)\s?)"
_SCALE = r"(?:\s?(?:trillion|billion|million|thousand|bn|mn|MM|m|k)\b)?"
_UNITS = (r"mg/kg/day|mg/kg|mg/day|mcg|µg|mg|kg|g|mL|ml|L|mmol/L|mmHg|bpm|units?|IU|kN/m|kN·m|kNm|kN|MPa|kPa|GPa|psi|bar|mm|cm|km|m²|m2|m³|"
          r"m3|kWh|MWh|kW|MW|kV|V|Hz|°C|°F|tonnes|t|sq\s?ft|square feet|hours|hrs|h|x|times|bps|basis points|shares|employees|people|staff|"
          r"FTEs?")
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
MONTH_ABBR = "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec"
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
                 "twelve": 12, "fourteen": 14, "fifteen": 15, "eighteen": 18, "twenty": 20, "twenty-one": 21, "twenty-four": 24,
                 "twenty-eight": 28, "thirty": 30, "forty-five": 45, "sixty": 60, "ninety": 90}
WORDS_OF = {value: word for word, value in NUMBER_WORDS.items()}
_ROLES = ("Buyer", "Seller", "Purchaser", "Vendor", "Lender", "Borrower", "Landlord", "Tenant", "Lessor", "Lessee", "Employer", "Employee",
          "Licensor", "Licensee", "Guarantor", "Contractor", "Subcontractor", "Client", "Supplier", "Customer", "Insurer", "Insured",
          "Policyholder", "Claimant", "Defendant", "Plaintiff", "Company", "Target", "Shareholder", "Trustee", "Beneficiary", "Franchisor",
          "Franchisee", "Assignor", "Assignee", "Obligor", "Obligee", "Parent", "Agent", "Principal", "Developer", "Owner", "Taxpayer",
          "Patient", "Prescriber")
COUNTERPART = {"Buyer": "Seller", "Purchaser": "Vendor", "Lender": "Borrower", "Landlord": "Tenant", "Lessor": "Lessee",
               "Employer": "Employee", "Licensor": "Licensee", "Insurer": "Insured", "Claimant": "Defendant", "Plaintiff": "Defendant",
               "Franchisor": "Franchisee", "Assignor": "Assignee", "Obligor": "Obligee", "Company": "Shareholder", "Trustee": "Beneficiary",
               "Client": "Supplier", "Customer": "Supplier", "Contractor": "Employer", "Developer": "Owner", "Principal": "Agent",
               "Parent": "Target"}
COUNTERPART |= {b: a for a, b in list(COUNTERPART.items()) if b not in COUNTERPART}
DURATION_STEPS = {"day": [1, 2, 3, 5, 7, 10, 14, 21, 28, 30, 45, 60, 90, 120, 180, 365], "week": [1, 2, 3, 4, 6, 8, 12, 26, 52],
                   "month": [1, 2, 3, 4, 6, 9, 12, 18, 24, 36], "year": [1, 2, 3, 4, 5, 6, 7, 10, 15, 20],
                   "hour": [1, 2, 4, 6, 8, 12, 24, 48, 72]}

PATTERNS = [
    ("amount", re.compile(rf"(?<![\w$€£¥])(?P<pre>{_CURRENCY})(?P<num>{_NUM})(?P<post>{_SCALE})|"
                          rf"(?<![\w.,])(?P<num2>{_NUM})(?P<post2>{_SCALE}\s?(?:USD|EUR|GBP|CHF|dollars|euros|pounds|francs)\b)")),
    ("percent", re.compile(rf"(?<![\w.,])(?P<num>{_NUM})(?P<post>\s?(?:%|per\s?cent\b|percent\b|percentage points\b))")),
    ("date", re.compile(rf"\b(?P<d>\d{{1,2}})(?P<ord>st|nd|rd|th)?\s(?P<mon>{MONTHS}|{MONTH_ABBR})\.?(?:,?\s(?P<y>\d{{4}}))?\b|"
                        rf"\b(?P<mon2>{MONTHS}|{MONTH_ABBR})\.?\s(?P<d2>\d{{1,2}})(?P<ord2>st|nd|rd|th)?,?\s(?P<y2>\d{{4}})\b|"
                        r"\b(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2})\b|"
                        r"\b(?P<sd>\d{1,2})/(?P<sm>\d{1,2})/(?P<sy>\d{4})\b")),
    ("duration", re.compile(rf"(?<![\w.,])(?P<num>\d+|{'|'.join(sorted(NUMBER_WORDS, key=len, reverse=True))})(?:\s\((?:\d+)\))?"
                            r"(?P<post>[\s-](?:business\s|working\s|calendar\s|clear\s|banking\s)?"
                            r"(?P<unit>day|week|month|year|hour)s?'?)\b", re.I)),
    ("quantity", re.compile(rf"(?<![\w.,])(?P<num>{_NUM})(?P<post>\s?(?:{_UNITS}))(?![\w/])")),
    ("clause", re.compile(r"(?:\b|(?=§))(?P<pre>(?:Sections?|sections?|Clauses?|clauses?|Articles?|articles?|Art\.|Paragraphs?|"
                          r"paragraphs?|para\.|Rules?|Regulations?|Schedules?|Parts?|Chapters?|Items?|reg\.|r\.|s\.|ss\.|§{1,2})\s?)"
                          r"(?P<num>\d+[A-Z]?(?:\.\d+)*(?:\([a-z0-9]+\))*)")),
    ("party", re.compile(r"[\"“](?P<quoted>[A-Z][A-Za-z0-9&.' -]{1,40})[\"”]|"
                         rf"\b[Tt]he (?P<role>{'|'.join(_ROLES)})\b|"
                         r"\b(?P<org>[A-Z][A-Za-z0-9&'-]+(?:\s(?:[A-Z][A-Za-z0-9&'-]+|&|of|and))*\s"
                         r"(?:Ltd|Limited|LLC|Inc|Incorporated|plc|PLC|GmbH|AG|SA|NV|BV|"
                         r"LLP|LP|Corp|Corporation|Holdings|Group|Bank|Partners|Capital|Trust|Hospital|Clinic|Council))\b\.?|"
                         r"\b(?P<person>(?:Mr|Mrs|Ms|Dr|Prof)\.?\s(?!Code\b|Act\b|Rules?\b)[A-Z][a-z]+(?:\s[A-Z][a-z]+)?)")),
]
_BARE = re.compile(rf"(?<![\w.,$€£¥])(?P<num>{_NUM})(?![\w%])")


@dataclass(frozen=True)
class Fact:
    kind: str
    text: str  # exactly as the reference writes it
    start: int
    end: int
    parts: tuple = ()  # (prefix, number text, suffix) for the numeric kinds; the date's pieces; the party's name


# --- Sentences and words -----------------------------------------------------------------------------

_ABBREVIATIONS = (r"(?:Mr|Mrs|Ms|Dr|Prof|Ltd|Inc|Co|Corp|No|Nos|e\.g|i\.e|cf|vs|St|Art|para|reg|r|s|ss|approx|incl|est|Sept|Jan|Feb|Mar|"
                  r"Apr|Jun|Jul|Aug|Sep|Oct|Nov|Dec|Cal|Bus|Civ|Stat|Rev|Gen|Pen|Lab|Gov|Cir|Ct|App|Supp|U\.S|U\.S\.C|Reg|Regs|Sch|Pt|Ch|"
                  r"Fig|fig|Dept)")
_STOP = frozenset(re.findall(r"\S+", """a an the of to in on at by for from with and \
or but not no nor is are was were be been being it its this that these those which who
whom whose what when where why how as than then so such any all each \
every both either neither one two into onto over under about above below
between within without per via upon whether if there their they them he \
she his her we our you your i me my do does did has have had can could
may might must shall should will would also only more most less least \
very same other another including include includes answer response agent
states state stated identifies identify mentions mention explains explain \
notes note gives give provides provide cites cite references reference
concludes conclude recommends recommend correctly clearly explicitly \
accurately says say lists list names name discusses discuss addresses address
considers consider confirms confirm specific specifies specify"""))


# Where the reasoning or the source of a claim starts: what follows is cut to leave the bare claim.
REASONING = re.compile(
    r"\s*(?:,\s*|\s+)(?:because|since|as|given|due to|owing to|under|pursuant to|per|according to|based on|in accordance with|"
    r"following|after|which|whereas|while|so that|as shown|as set out|see)\b.*$|\s*,?\s*(?:i\.e\.|e\.g\.|that is|namely)\s.*$|"
    r"\s*[(\[].*$|\s*[—–:;].*$",
    re.I | re.S,
)


def content_stop_words() -> frozenset:
    return _STOP


def sentences(text: str) -> list[str]:
    """The text's sentences (and list items), stripped; abbreviations and decimals do not end one."""
    pieces, start = [], 0
    for match in re.finditer(r"(?<=[.!?])\s+(?=[A-Z\"“(])|\n+", text):
        before = text[start:match.start()]
        if re.search(rf"\b{_ABBREVIATIONS}\.$", before):
            continue
        pieces.append(before)
        start = match.end()
    pieces.append(text[start:])
    return [p.strip().lstrip("-*• ").strip() for p in pieces if p.strip().lstrip("-*• ").strip()]


def content_words(text: str) -> set[str]:
    """The lowercased words that carry meaning (no stop words, no bare numbers), crudely stemmed:
    their first six letters ("entitled" and "entitlement" are one word here)."""
    words = set()
    for word in re.findall(r"[A-Za-z][A-Za-z'-]+", text.lower()):
        if word in _STOP or len(word) < 3:
            continue
        word = re.sub(r"(?:'s|ies|es|s)$", "", word) or word
        words.add(word[:6])
    return words


_CONCLUSION_MARKERS = re.compile(
    r"^(?:yes|no)\b|\b(?:therefore|thus|accordingly|hence|in conclusion|in summary|conclusion|we conclude|i conclude|the answer is|"
    r"in short|recommend|overall|bottom line)\b",
    re.I,
)


def key_sentence_index(text: str) -> int:
    """The index of the sentence that states the conclusion: the first with a conclusion
    marker (yes/no, therefore, in conclusion …), else the first."""
    parts = sentences(text)
    for index, sentence in enumerate(parts):
        if _CONCLUSION_MARKERS.search(sentence):
            return index
    return 0


# --- Finding facts ------------------------------------------------------------------------------------

def extract_facts(text: str) -> list[Fact]:
    """Every fact of the text, at most one per span (earlier kinds in PATTERNS win an overlap),
    in text order, plus the conclusion (a whole sentence) when it can be reversed."""
    taken: list[tuple[int, int]] = []
    found: list[Fact] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    for kind, pattern in PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            value = match.group(0)
            trimmed = value.rstrip(" .'")
            end = start + len(trimmed)
            if not trimmed or not free(start, end):
                continue
            fact = _fact(kind, match, trimmed, start, end)
            if fact is None:
                continue
            taken.append((start, end))
            found.append(fact)
    if not [f for f in found if f.kind != "party"]:
        for match in _BARE.finditer(text):
            start, end = match.span()
            number = match.group("num")
            if re.fullmatch(r"(?:19|20)\d\d", number) or not free(start, end):
                continue
            taken.append((start, end))
            found.append(Fact("number", number, start, end, ("", number, "")))
    found.sort(key=lambda f: f.start)
    parts = sentences(text)
    if parts:
        conclusion = parts[key_sentence_index(text)]
        if flip_conclusion(conclusion):
            at = text.find(conclusion)
            found.append(Fact(CONCLUSION, conclusion, at, at + len(conclusion), (conclusion,)))
    return found


def _fact(kind: str, match: re.Match, text: str, start: int, end: int) -> Fact | None:
    groups = {k: v for k, v in match.groupdict().items() if v is not None}
    if kind in ("amount", "percent", "quantity"):
        number = groups.get("num") or groups.get("num2")
        prefix = groups.get("pre", "")
        suffix = text[len(prefix) + len(number):]
        if kind == "quantity" and re.fullmatch(r"(?:19|20)\d\d", number):
            return None
        return Fact(kind, text, start, end, (prefix, number, suffix))
    if kind == "duration":
        return Fact(kind, text, start, end, ("", groups["num"], text[len(groups["num"]):], groups["unit"].lower()))
    if kind == "clause":
        return Fact(kind, text, start, end, (groups["pre"], groups["num"], ""))
    if kind == "date":
        return _date_fact(groups, text, start, end)
    if kind == "party":
        if groups.get("quoted"):
            name = groups["quoted"].strip()
            return Fact(kind, text, start, end, (name, "quoted")) if len(name.split()) <= 5 else None
        if groups.get("role"):
            return Fact(kind, text, start, end, (groups["role"], "role"))
        name = groups.get("org") or groups.get("person")
        lead = re.match(r"(?:The|A|An|In|On|At|For|By|From|To|Under)\s", name)
        if lead:  # a capitalised first word of the sentence is not part of the name
            name, start = name[lead.end():], start + lead.end()
            if not re.match(r"[A-Z]", name) or " " not in name:
                return None
        return Fact(kind, name, start, start + len(name), (name, "name"))
    return None


def _month_number(name: str) -> int:
    name = name.rstrip(".")[:3].title()
    return list(calendar.month_abbr).index(name)


def _date_fact(groups: dict, text: str, start: int, end: int) -> Fact | None:
    try:
        if "mon" in groups:
            month, day, year = _month_number(groups["mon"]), int(groups["d"]), int(groups.get("y") or 2001)
            style = {"order": "dmy", "month": groups["mon"], "ordinal": "ord" in groups, "year": "y" in groups}
        elif "mon2" in groups:
            month, day, year = _month_number(groups["mon2"]), int(groups["d2"]), int(groups["y2"])
            style = {"order": "mdy", "month": groups["mon2"], "ordinal": "ord2" in groups, "year": True}
        elif "iy" in groups:
            year, month, day = int(groups["iy"]), int(groups["im"]), int(groups["id"])
            style = {"order": "iso", "year": True}
        else:
            day, month, year = int(groups["sd"]), int(groups["sm"]), int(groups["sy"])
            style = {"order": "slash", "padded": len(groups["sd"]) == 2, "year": True}
        value = date(year, month, day)
    except ValueError:
        return None
    return Fact("date", text, start, end, (value, style))



# What a fact becomes where a probe must not give it (the unsupported conclusion, a hedge's other facts).
VAGUE = {"amount": "the amount in question", "percent": "the relevant percentage", "quantity": "the relevant figure",
         "date": "the relevant date", "duration": "the applicable period", "clause": "the relevant provision",
         "number": "the relevant figure", "party": "the party concerned"}


def strip_facts(text: str, facts: list[Fact], replacements: dict) -> str:
    """The text with each fact (found in it) replaced by the phrase for its kind."""
    def vague(match: re.Match, kind: str) -> str:
        phrase = replacements.get(kind, "")
        before = (match.group("det") or "").strip().lower()
        if before in ("every", "each", "per") and phrase.startswith("the "):
            return f"{match.group('det')}{phrase[4:]}"  # "every the applicable period" → "every applicable period"
        if before in ("the", "a", "an") and phrase:
            return phrase[:1].upper() + phrase[1:] if match.group("det")[:1].isupper() else phrase
        return (match.group("det") or "") + phrase

    for fact in sorted(facts, key=lambda f: -len(f.text)):
        pattern = r"(?P<det>\b(?:the|a|an|every|each|per|within|for)\s+)?" + re.escape(fact.text) + r"'?"
        text = re.sub(pattern, lambda match, kind=fact.kind: vague(match, kind), text, flags=re.I)
    return re.sub(r"\s+([,.;:])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()




def strip_end(text: str) -> str:
    return text.strip().rstrip(".!;:,").strip()


def join_and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
