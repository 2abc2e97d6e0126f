"""Facts read from the facts sheet and the documents, compared role by role.

The facts sheet is the reference where it states a fact. Where it does not, the value most
documents state is (the first one on a tie). A finding is one document stating a fact with
a value that truly differs from the reference after normalising both; it carries both
passages so an expert can judge it without opening anything.
"""

import re
from collections import Counter
from dataclasses import dataclass, field

from authoring.consistency.parties import PartyName, party_mentions, party_value
from authoring.consistency.passages import passages
from authoring.consistency.roles import ROLE_BY_KEY, TYPED_ROLES, Claim, Role, bind, custom_role, role_for_sheet_key
from authoring.consistency.values import READERS, Kind, Value, first_kind, same

FACTS_SHEET = "Facts sheet"
SHOWN_AROUND = 160  # characters of a long passage shown each side of the value


@dataclass(frozen=True)
class Evidence:
    """Where a value is stated: the source (a document path or the facts sheet) and the
    passage, cut into the text before the value, the value as written, and the text after."""

    source: str
    document_id: int | None
    passage: str
    start: int
    end: int

    @property
    def before(self) -> str:
        text = self.passage[: self.start]
        return f"…{text[-SHOWN_AROUND:]}" if len(text) > SHOWN_AROUND else text

    @property
    def value(self) -> str:
        return self.passage[self.start : self.end]

    @property
    def after(self) -> str:
        text = self.passage[self.end :]
        return f"{text[:SHOWN_AROUND]}…" if len(text) > SHOWN_AROUND else text

    @classmethod
    def of(cls, source: str, document_id: int | None, passage: str, value: Value) -> "Evidence":
        return cls(source, document_id, passage, value.start, value.end)

    @property
    def is_facts_sheet(self) -> bool:
        return self.document_id is None


@dataclass(frozen=True)
class Fact:
    role: Role
    label: str  # the facts sheet's own key where the fact comes from it, else the role's label
    value: Value
    evidence: Evidence


@dataclass(frozen=True)
class Finding:
    """A fact stated with two different values: `reference` (the facts sheet, or the value
    most documents state) and `found` (this document)."""

    reference: Fact
    found: Fact

    # The names the API and older pages use.
    @property
    def fact_key(self) -> str:
        return self.reference.label

    @property
    def fact_value(self) -> str:
        return self.reference.value.text

    @property
    def document_id(self) -> int:
        return self.found.evidence.document_id  # type: ignore[return-value]

    @property
    def document_path(self) -> str:
        return self.found.evidence.source

    @property
    def found_value(self) -> str:
        return self.found.value.text

    @property
    def snippet(self) -> str:
        return self.found.evidence.passage

    @property
    def kind(self) -> str:
        return str(self.found.value.kind)


@dataclass
class Report:
    findings: list[Finding]
    facts: list[Fact]
    documents_checked: int
    unchecked_keys: list[str] = field(default_factory=list)  # facts-sheet rows with no value we can compare
    # why each was not checked, when its key names what it should hold: {key: "an amount"}
    unchecked_wanted: dict[str, str] = field(default_factory=dict)

    @property
    def unchecked_rows(self) -> list[dict]:
        return [{"key": key, "wanted": self.unchecked_wanted.get(key, "")} for key in self.unchecked_keys]

    @property
    def sheet_facts(self) -> int:
        return sum(1 for f in self.facts if f.evidence.is_facts_sheet)

    @property
    def document_facts(self) -> int:
        return len(self.facts) - self.sheet_facts

    def checked(self) -> list[dict]:
        """What was compared, role by role: each value with the sources that state it."""
        rows: dict[str, dict] = {}
        for fact in self.facts:
            row = rows.setdefault(fact.role.key, {"label": fact.label, "values": {}})
            if fact.evidence.is_facts_sheet:
                row["label"] = fact.label
            row["values"].setdefault(fact.value.label, []).append(fact.evidence.source)
        return [{"label": r["label"], "values": [{"value": v, "where": _where(s)} for v, s in r["values"].items()]}
                for r in rows.values()]


def _where(sources: list[str]) -> str:
    """"facts sheet and 2 documents": where one value is stated."""
    documents = len(set(sources) - {FACTS_SHEET})
    parts = ["facts sheet"] if FACTS_SHEET in sources else []
    if documents:
        parts.append(f"{documents} document{'s' if documents > 1 else ''}")
    return " and ".join(parts)


# --- Reading facts ----------------------------------------------------------------------

def _values(text: str) -> dict[Kind, list[Value]]:
    return {kind: reader(text) for kind, reader in READERS.items()}


def _sheet_names(value: str, many: bool) -> list[tuple[str, int]]:
    """The party names of a facts-sheet value, with their offsets: parentheses are notes."""
    blanked = re.sub(r"\([^)]*\)", lambda m: " " * len(m.group(0)), value)
    splitter = r";|,|\band\b(?![^;]*\b(?:LLP|LP)\b)" if many else r";"
    names, offset = [], 0
    for piece in re.split(f"({splitter})", blanked):
        stripped = piece.strip()
        if stripped and not re.fullmatch(splitter, piece) and stripped[0].isupper():
            name = stripped.rstrip(" ")
            if name.endswith(".") and name.rsplit(None, 1)[-1].strip(".").lower() not in ("inc", "ltd", "corp", "co"):
                name = name[:-1]
            names.append((name, offset + piece.index(stripped)))
            if not many:
                break
        offset += len(piece)
    return names


KIND_NOUNS = {Kind.AMOUNT: "an amount", Kind.DATE: "a date", Kind.PERCENT: "a percentage", Kind.DURATION: "a period",
              Kind.JURISDICTION: "a governing law", Kind.PARTY: "a party"}


def sheet_facts(rows: list[dict], wanted: dict[str, str] | None = None) -> tuple[list[Fact], list[str]]:
    """The facts sheet's facts, and the keys of the rows not checked. `wanted`, when given,
    gets for each key whose name says what it should hold (Escrow: an amount) that kind,
    so the page can say why its value was not checked."""
    facts: list[Fact] = []
    unchecked: list[str] = []
    for row in rows:
        key, value = " ".join(str(row.get("key", "")).split()), " ".join(str(row.get("value", "")).split())
        if not key or not value:
            continue
        passage, offset = f"{key}: {value}", len(key) + 2
        role = role_for_sheet_key(key)
        if role is None:
            kind = first_kind(value)
            if kind is None:
                unchecked.append(key)
                continue
            role = custom_role(key, kind)
        found: list[Fact] = []
        if role.kind == Kind.PARTY:
            for name, start in _sheet_names(value, role.many):
                party = party_value(name, start + offset)
                found.append(Fact(role, key, party, Evidence.of(FACTS_SHEET, None, passage, party)))
        else:
            values = _values(value)
            claims = bind(value, values, (*TYPED_ROLES, role) if role not in TYPED_ROLES else TYPED_ROLES)
            claimed = {(c.value.kind, c.value.start) for c in claims}
            rest = [v for v in values[role.kind] if (v.kind, v.start) not in claimed]
            if rest and not any(c.role.key == role.key for c in claims):
                claims.append(Claim(role, rest[0], 0, 0))  # the row's own key names its first unclaimed value
            for claim in claims:
                value_ = claim.value
                shifted = Value(value_.kind, value_.normal, value_.text, value_.start + offset, value_.end + offset)
                label = key if claim.role.key == role.key else claim.role.label
                found.append(Fact(claim.role, label, shifted, Evidence.of(FACTS_SHEET, None, passage, shifted)))
        if found:
            facts.extend(found)
        else:
            unchecked.append(key)
            if wanted is not None:
                wanted[key] = KIND_NOUNS.get(role.kind, "")
    return facts, unchecked


def document_facts(document_id: int, path: str, text: str, extra_roles: tuple[Role, ...] = ()) -> list[Fact]:
    texts = [p.text for p in passages(text)]
    facts: list[Fact] = []
    for passage in texts:
        for claim in bind(passage, _values(passage), (*TYPED_ROLES, *extra_roles)):
            facts.append(Fact(claim.role, claim.role.label, claim.value, Evidence.of(path, document_id, passage, claim.value)))
    for mention in party_mentions(texts):
        role = ROLE_BY_KEY[mention.role]
        facts.append(Fact(role, role.label, mention.value, Evidence.of(path, document_id, mention.passage, mention.value)))
    return facts


# --- Comparing --------------------------------------------------------------------------

def _agrees(fact: Fact, references: list[Fact]) -> bool:
    verdicts = [same(fact.value.kind, fact.value.normal, r.value.normal) for r in references]
    return any(v is True for v in verdicts) or all(v is None for v in verdicts)


def _reference_from_documents(stated: list[Fact]) -> Fact:
    support = Counter()
    for i, fact in enumerate(stated):
        support[i] = sum(1 for other in stated if same(fact.value.kind, fact.value.normal, other.value.normal))
    best = max(support.values())
    return stated[min(i for i, n in support.items() if n == best)]


def compare(sheet: list[Fact], documents: list[Fact]) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[str, int | None, str]] = set()
    roles = {f.role.key: f.role for f in [*sheet, *documents]}
    for key, role in roles.items():
        references = [f for f in sheet if f.role.key == key]
        stated = [f for f in documents if f.role.key == key]
        if not stated or (role.many and not references):
            continue
        references = references or [_reference_from_documents(stated)]
        for fact in stated:
            if _agrees(fact, references):
                continue
            marker = (key, fact.evidence.document_id, str(fact.value.normal))
            if marker in seen:
                continue
            seen.add(marker)
            findings.append(Finding(reference=references[0], found=fact))
    return findings


def check(facts_sheet: list[dict], documents: list[tuple[int, str, str]]) -> Report:
    """`documents` are (id, path, text) triples in data-room order."""
    wanted: dict[str, str] = {}
    sheet, unchecked = sheet_facts(facts_sheet, wanted)
    custom = tuple({f.role.key: f.role for f in sheet if f.role.key.startswith("sheet:")}.values())
    stated = [fact for doc_id, path, text in documents for fact in document_facts(doc_id, path, text, custom)]
    return Report(findings=compare(sheet, stated), facts=[*sheet, *stated], documents_checked=len(documents), unchecked_keys=unchecked,
                  unchecked_wanted=wanted)


__all__ = ["Evidence", "Fact", "Finding", "PartyName", "Report", "check"]
