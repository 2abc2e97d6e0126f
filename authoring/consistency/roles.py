"""The facts the check knows (a closed list of roles) and how a typed value in a passage is
given its role: by the words that name it ("price", "escrow", "long-stop date") next to it.

Each cue in a passage claims the nearest value of its kind within a few words; a value
claimed by two cues goes to the nearer one. A value that no cue claims has no role and is
never compared: "£3,150,000 outstanding" is not a price just because it is an amount.
"""

import re
from dataclasses import dataclass

from authoring.consistency.values import Kind, Value

MAX_GAP = 60  # characters between a cue and its value


@dataclass(frozen=True)
class Role:
    key: str
    label: str
    kind: Kind
    sheet_key: re.Pattern  # facts-sheet keys that state this fact
    cue: re.Pattern | None = None  # words naming it next to its value in a document (typed roles)
    many: bool = False  # a set of values (the sellers), not one

    def cues(self, text: str) -> list[re.Match]:
        if self.cue is None:
            return []
        found = list(self.cue.finditer(text))
        if self.key == "price":  # an option's exercise price is not the deal's price
            found = [m for m in found if not _NOT_A_PRICE.search(text[max(m.start() - 14, 0) : m.start()])]
        return found


def _re(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.I)


_NOT_A_PRICE = _re(r"\b(?:exercise|strike|share|issue|subscription|unit|option|offer)\s+$")
_ESCROW = r"\b(?:escrow|holdback|retention)\b"

# Order matters for facts-sheet keys: the first role whose sheet_key matches takes the row
# ("Buyer's counsel" before "Buyer", "Escrow amount" before "Price", "Long-stop" before "Closing").
ROLES: tuple[Role, ...] = (
    Role("buyer_counsel", "Buyer's counsel", Kind.PARTY, _re(r"\b(?:buyer|purchaser|acquirer)s?['’]?s?\s+(?:counsel|lawyers|solicitors)")),
    Role("seller_counsel", "Sellers' counsel", Kind.PARTY, _re(r"\b(?:seller|vendor)s?['’]?s?\s+(?:counsel|lawyers|solicitors)")),
    Role("long_stop_date", "Long-stop date", Kind.DATE, _re(r"long[- ]?stop"), _re(r"\blong[- ]?stop\b")),
    Role("escrow_amount", "Escrow amount", Kind.AMOUNT, _re(_ESCROW), _re(_ESCROW)),
    Role("escrow_share", "Escrow (share of the price)", Kind.PERCENT, _re(_ESCROW), _re(_ESCROW)),
    Role("escrow_period", "Escrow period", Kind.DURATION, _re(_ESCROW), _re(_ESCROW)),
    Role("price", "Purchase price", Kind.AMOUNT, _re(r"\b(?:price|consideration|enterprise value|valuation)\b"),
         _re(r"\b(?:purchase price|price|consideration|enterprise value)\b")),
    Role("exclusivity_period", "Exclusivity period", Kind.DURATION, _re(r"exclusiv|no[- ]shop"), _re(r"\b(?:exclusiv\w*|no[- ]shop)\b")),
    Role("signing_date", "Signing date", Kind.DATE, _re(r"\bsigning\b|\bsign date\b"), _re(r"\bsigning\b")),
    Role("closing_date", "Closing date", Kind.DATE, _re(r"\b(?:closing|completion)\b"), _re(r"\b(?:closing|completion)\b")),
    Role("governing_law", "Governing law", Kind.JURISDICTION, _re(r"\b(?:governing|applicable|choice of) law\b"),
         _re(r"\bgoverning law\b|\bgoverned by\b|\bconstrued in accordance with\b")),
    Role("buyer", "Buyer", Kind.PARTY, _re(r"^\s*(?:the\s+)?(?:buyer|purchaser|acquirer|acquiror)\s*$")),
    Role("sellers", "Sellers", Kind.PARTY, _re(r"^\s*(?:the\s+)?(?:sellers?|vendors?|shareholders?)\s*$"), many=True),
    Role("target", "Target", Kind.PARTY, _re(r"^\s*(?:the\s+)?(?:target|target company|company)\s*$")),
)
ROLE_BY_KEY = {role.key: role for role in ROLES}
TYPED_ROLES = tuple(role for role in ROLES if role.cue is not None)


def role_for_sheet_key(key: str) -> Role | None:
    return next((role for role in ROLES if role.sheet_key.search(key)), None)


def custom_role(key: str, kind: Kind) -> Role:
    """A facts-sheet row we have no role for, with a typed value ("Break fee: $1m"): documents
    state it when they name the key itself next to a value of that kind."""
    words = r"\s+".join(re.escape(w) for w in key.split())
    return Role(f"sheet:{key.lower()}", key, kind, _re(rf"^{words}$"), _re(rf"\b{words}\b"))


@dataclass(frozen=True)
class Claim:
    role: Role
    value: Value
    cue_start: int
    cue_end: int


def _gap(value: Value, start: int, end: int) -> int:
    if value.start >= end:
        return value.start - end
    if value.end <= start:
        return start - value.end
    return 0


def bind(text: str, values: dict[Kind, list[Value]], roles: tuple[Role, ...]) -> list[Claim]:
    """Each cue claims its nearest value of its kind (a value after the cue wins a tie)."""
    candidates: list[tuple[int, int, Role, Value, re.Match]] = []
    for role in roles:
        for cue in role.cues(text):
            options = [v for v in values.get(role.kind, []) if _gap(v, cue.start(), cue.end()) <= MAX_GAP]
            if not options:
                continue
            best = min(options, key=lambda v: (_gap(v, cue.start(), cue.end()), v.start < cue.start()))
            candidates.append((_gap(best, cue.start(), cue.end()), best.start < cue.start(), role, best, cue))
    claims: dict[tuple[Kind, int], Claim] = {}
    for _gap_size, _before, role, value, cue in sorted(candidates, key=lambda c: (c[0], c[1])):
        claims.setdefault((value.kind, value.start), Claim(role, value, cue.start(), cue.end()))
    return sorted(claims.values(), key=lambda c: c.value.start)
