"""Parties by role, read only where a document says the role in so many words:

- a defined term:   Acme Industries Inc. (the "Buyer")
- a label:          Buyer: Acme Industries Inc.   (or a table row "Buyer | Acme …")
- an acquisition:   Acme Industries Inc. proposes to acquire 100% of the shares of Beta Robotics Ltd
- counsel:          Buyer's counsel: Harlow & Finch LLP

A company is a run of capitalised words ending in a company form (Inc., Ltd, LLP, plc, …);
a defined short name ("Acme") stands for the company it was defined for in that document.
Capitals alone are never a name: "BUYER'S DRAFT" names nobody.
"""

import re
from dataclasses import dataclass

from authoring.consistency.values import Kind, Value

_FORMS = (r"Inc\.?|Incorporated|Ltd\.?|Limited|LLP|LLC|L\.L\.C\.|LP|L\.P\.|plc|PLC|GmbH|AG|S\.A\.|SA|SAS|B\.V\.|N\.V\.|"
          r"Corp\.?|Corporation|Pty Ltd|S\.?p\.?A\.?|S\.?r\.?l\.?")
_FORM_WORDS = {"inc", "incorporated", "ltd", "limited", "llp", "llc", "lp", "plc", "gmbh", "ag", "sa", "sas", "bv", "nv",
               "corp", "corporation", "co", "pty", "spa", "srl", "the"}
_WORD = r"[A-Z][A-Za-z0-9'’&.-]*"
_LINK = rf"(?:{_WORD}|&|and|of|de|du|von|van|der)"
ORG = rf"{_WORD}(?:\s+{_LINK}){{0,6}}?\s+(?:{_FORMS})(?![\w])"
NAME = rf"{_WORD}(?:\s+{_LINK}){{0,6}}"  # a person or a company without its form
NAME2 = rf"{_WORD}(?:\s+{_LINK}){{1,6}}"  # two words at least: a label's value, never a column title
_LEADING = re.compile(r"^(?:The|From|To|Between|And|By|With|For|Dear|Re|Cc)\s+")
_QUOTED = r"[\"“”'‘’]"

ROLE_TERMS = {"buyer": "buyer", "purchaser": "buyer", "acquirer": "buyer", "acquiror": "buyer", "seller": "sellers",
              "sellers": "sellers", "vendor": "sellers", "vendors": "sellers", "target": "target", "company": "target"}
_COUNSEL = rf"(?i:counsel|lawyers|solicitors)\s*[(:,]?\s*(?:is\s+)?(?P<who>{ORG}|{NAME})"
_ROLE_WORD = r"(?P<term>(?i:buyer|purchaser|acquir[eo]r|sellers?|vendors?|target|company))"


@dataclass(frozen=True)
class PartyName:
    """A party's name compared word by word, without its company form or punctuation: a
    short form is the same party ("Acme" = "Acme Industries Inc."), another word is not."""

    words: tuple[str, ...]

    @classmethod
    def of(cls, name: str) -> "PartyName":
        name = re.sub(r"\([^)]*\)", " ", name).replace("&", " and ")
        words = [w for w in re.sub(r"[^\w\s-]", " ", name.lower()).split() if w not in _FORM_WORDS]
        return cls(tuple(words))

    def matches(self, other: "PartyName") -> bool:
        shorter, longer = sorted((self.words, other.words), key=len)
        return bool(shorter) and longer[: len(shorter)] == shorter

    def __str__(self) -> str:
        return " ".join(w.capitalize() for w in self.words)


@dataclass(frozen=True)
class PartyMention:
    role: str  # a role key of roles.ROLES
    value: Value  # span of the name in `passage`
    passage: str


def party_value(name: str, start: int) -> Value:
    return Value(Kind.PARTY, PartyName.of(name), name, start, start + len(name))


def _trim(name: str, start: int) -> tuple[str, int]:
    while match := _LEADING.match(name):
        name, start = name[match.end() :], start + match.end()
    name = re.sub(r"(?:\s+(?:and|of|&|de|du|von|van|der))+$", "", name.rstrip(" ,;"))
    name = name.rstrip(" ,;")
    if name.endswith(".") and name.rsplit(None, 1)[-1].strip(".").lower() not in _FORM_WORDS:
        name = name[:-1]  # the sentence's full stop, not "Inc."
    return name, start


def _aliases(passages: list[str]) -> dict[str, tuple[str, int, int]]:
    """Short names defined in a document: alias -> (the full name, passage index, offset)."""
    found: dict[str, tuple[str, int, int]] = {}
    pattern = re.compile(rf"(?P<name>{ORG}|{NAME})\s*,?\s*\((?:the\s+)?{_QUOTED}(?P<alias>[A-Z][\w .&-]{{0,40}}?){_QUOTED}\)")
    for index, text in enumerate(passages):
        for match in pattern.finditer(text):
            name, start = _trim(match.group("name"), match.start("name"))
            if name and match.group("alias").lower() not in ROLE_TERMS:
                found.setdefault(match.group("alias"), (name, index, start))
    return found


def party_mentions(passages: list[str]) -> list[PartyMention]:
    aliases = _aliases(passages)
    alias_re = "|".join(re.escape(a) for a in sorted(aliases, key=len, reverse=True))
    who = rf"(?P<who>{ORG}|{alias_re})" if alias_re else rf"(?P<who>{ORG})"
    patterns = [
        (None, re.compile(rf"(?P<who>{ORG}|{NAME})\s*,?\s*\((?:the\s+|each\s+a\s+|together\s+the\s+)?{_QUOTED}{_ROLE_WORD}{_QUOTED}\)")),
        (None, re.compile(rf"^(?:(?i:the)\s+)?{_ROLE_WORD}\s*(?::|\||\bis\b)\s*(?P<who>{ORG}|{NAME2})")),
        ("buyer", re.compile(rf"{who}\s+(?:\([^)]*\)\s+)?(?:(?:proposes|agrees|has agreed|intends|wishes|is) to\s+|will\s+)?"
                             r"(?:acquires?|buys|purchases?|buy|is (?:buying|acquiring|purchasing))\b")),
        ("target", re.compile(r"\b(?:acquire|acquiring|acquires|buy|buying|buys|purchase|purchasing|acquisition of)\s+"
                              r"(?:(?:all|\d+%|the whole)\s+of\s+)?(?:the\s+)?(?:entire\s+)?(?:issued\s+)?(?:share capital|shares)\s+"
                              rf"(?:in|of)\s+{who}")),
        ("target", re.compile(rf"\b(?:acquire|acquires|buy|buys|purchase|acquisition of)\s+{who}")),
        ("buyer_counsel", re.compile(rf"\b(?i:buyer|purchaser)['’]?s\s+{_COUNSEL}")),
        ("seller_counsel", re.compile(rf"\b(?i:seller|vendor)s?['’]s?\s+{_COUNSEL}")),
    ]
    mentions: list[PartyMention] = []
    for text in passages:
        for fixed_role, pattern in patterns:
            for match in pattern.finditer(text):
                role = fixed_role or ROLE_TERMS[match.group("term").lower()]
                name, start = _trim(match.group("who"), match.start("who"))
                if not name or not name[0].isupper() or name.lower() in ROLE_TERMS:
                    continue
                if name in aliases:  # "Acme proposes to acquire": show where "Acme" was defined, then this
                    full, where, offset = aliases[name]
                    if passages[where] == text:
                        mentions.append(PartyMention(role, party_value(full, offset), text))
                    else:
                        mentions.append(PartyMention(role, party_value(full, offset), f"{passages[where]} … {text}"))
                    continue
                mentions.append(PartyMention(role, party_value(name, start), text))
    return mentions
