"""Reversing a yes/no conclusion ("the covenant is breached" → "is not breached"), for the
near miss that reverses it and the hedge that says both; and the words that make a phrase a
claim rather than a topic (the keyword echo leaves them out). Pure functions."""

import re

_TOGGLES = [("unenforceable", "enforceable"), ("invalid", "valid"), ("unlawful", "lawful"), ("illegal", "legal"),
            ("non-compliant", "compliant"), ("noncompliant", "compliant"), ("ineligible", "eligible"), ("inadmissible", "admissible"),
            ("unreasonable", "reasonable"), ("insolvent", "solvent"), ("inapplicable", "applicable"), ("unsafe", "safe"),
            ("inadequate", "adequate"), ("insufficient", "sufficient"), ("unacceptable", "acceptable"), ("impermissible", "permissible"),
            ("unauthorised", "authorised"), ("unauthorized", "authorized"), ("non-taxable", "taxable"), ("non-deductible", "deductible"),
            ("non-refundable", "refundable")]
# Verbs that carry the conclusion themselves: "fails the check" → "passes the check".
_VERBS = [("fails", "passes"), ("exceeds", "does not exceed"), ("meets", "does not meet"), ("complies", "does not comply"),
          ("breaches", "does not breach"), ("qualifies", "does not qualify"), ("applies", "does not apply"),
          ("requires", "does not require")]
_LAST_RESORT = [("below", "above"), ("within", "outside"), ("before", "after")]
# The words that make a sentence a yes/no conclusion (not "payable", "due", "may": they sit in
# statements of figures as often as in conclusions).
_VOCABULARY = re.compile(
    r"\b(?:enforceable|unenforceable|valid|invalid|lawful|unlawful|legal|illegal|compliant|non-compliant|eligible|ineligible|admissible|"
    r"reasonable|solvent|insolvent|applicable|safe|unsafe|adequate|inadequate|sufficient|insufficient|acceptable|unacceptable|permissible|"
    r"authori[sz]ed|liable|taxable|deductible|refundable|exempt|entitled|required|obliged|obligated|permitted|allowed|breach|breached|void|"
    r"voidable|recoverable|covered|triggered|passes|fails|exceeds|meets|complies|qualifies)\b",
    re.I,
)
# Words that make a phrase a claim rather than a topic ("the covenant is breached"): the keyword echo leaves them out.
PREDICATE = re.compile(
    r"\b(?:is|are|was|were|be|been|will|would|should|must|may|might|could|can|cannot|does|do|did|has|have|had|not|no|never|"
    r"fails|passes|exceeds|meets|complies|breaches|qualifies)\b|" + _VOCABULARY.pattern,
    re.I,
)
_CONTRACTIONS = {"isn't": "is", "aren't": "are", "wasn't": "was", "weren't": "were", "won't": "will", "wouldn't": "would",
                 "shouldn't": "should", "mustn't": "must", "can't": "can", "couldn't": "could", "doesn't": "does", "don't": "do",
                 "didn't": "did", "hasn't": "has", "haven't": "have", "needn't": "need"}
_AUX = re.compile(r"\b(is|are|was|were|will|would|should|must|may|might|could)\b(?!\s+not\b)", re.I)


def flip_conclusion(sentence: str) -> str:
    """The sentence saying the opposite (a yes/no conclusion reversed), or "" when it states
    no yes/no conclusion that can be reversed safely."""
    text = sentence.strip()
    lead = re.match(r"^(Yes|No)\b[,.:;!—–-]?\s*", text)
    rest = text[lead.end():] if lead else text
    if not lead and not _VOCABULARY.search(rest):
        return ""
    flipped = _flip_polarity(rest) if rest else ""
    if lead:
        word = "No" if lead.group(1) == "Yes" else "Yes"
        return f"{word}, {flipped or rest}" if rest else f"{word}."
    return flipped


def _match_case(replacement: str, original: str) -> str:
    return replacement[:1].upper() + replacement[1:] if original[:1].isupper() else replacement


def _replace(text: str, match: re.Match, new: str) -> str:
    return text[:match.start()] + _match_case(new, match.group(0)) + text[match.end():]


def _flip_polarity(text: str) -> str:
    """Reverse the first polarity that carries the conclusion: a negation is dropped, an
    adjective takes its negative form, or "not" goes after the auxiliary nearest before the
    conclusion's word ("because leverage is 4.6x, the covenant is breached": the second "is")."""
    for contraction, plain in _CONTRACTIONS.items():
        match = re.search(rf"\b{re.escape(contraction)}\b", text, re.I)
        if match:
            return _replace(text, match, plain)
    match = re.search(r"\b(?:cannot|can not)\b", text, re.I)
    if match:
        return _replace(text, match, "can")
    match = re.search(r"\b(is|are|was|were|will|would|should|must|may|might|could|does|do|did|has|have|had|need)\s+not\b\s*", text, re.I)
    if match:
        return text[:match.start()] + match.group(1) + " " + text[match.end():]
    match = re.search(r"\b(?:no longer)\s+", text, re.I)
    if match:
        return text[:match.start()] + text[match.end():]
    # An adjective said of the subject ("is unenforceable", "are not eligible"), not one before a noun ("taxable turnover").
    for negative, positive in _TOGGLES:
        for old, new in ((negative, positive), (positive, negative)):
            match = re.search(
                rf"\b(?:is|are|was|were|be|been|remains?|becomes?)\s+(?:\w+\s+)?(?P<word>{re.escape(old)})\b(?!\s+[a-z]+ing\b)", text, re.I
            )
            if match:
                return text[:match.start("word")] + _match_case(new, match.group("word")) + text[match.end("word"):]
    match = re.search(r"\b(has|have|had)\s+been\b", text, re.I)
    if match:
        return text[:match.start()] + f"{match.group(1)} not been" + text[match.end():]
    word = _VOCABULARY.search(text)
    before = [m for m in _AUX.finditer(text) if word is None or m.start() <= word.start()]
    if before:
        return text[:before[-1].end()] + " not" + text[before[-1].end():]
    # No auxiliary before the conclusion's word: the word may be the verb itself ("B3 fails the check").
    verbs = sorted((m.start(), m, new) for old, new in _VERBS for m in [re.search(rf"\b{old}\b", text, re.I)] if m)
    if verbs and (word is None or verbs[0][0] <= word.start()):
        return _replace(text, verbs[0][1], verbs[0][2])
    match = _AUX.search(text)
    if match:
        return text[:match.end()] + " not" + text[match.end():]
    match = re.search(r"\bcan\b", text, re.I)
    if match:
        return _replace(text, match, "cannot")
    if verbs:
        return _replace(text, verbs[0][1], verbs[0][2])
    match = re.search(r"\b(has|have)\b", text, re.I)
    if match:
        return _replace(text, match, "does not have" if match.group(1).lower() == "has" else "do not have")
    for old, new in _LAST_RESORT:
        match = re.search(rf"\b{old}\b", text, re.I)
        if match:
            return _replace(text, match, new)
    return ""
