"""The built-in probes, built from the task's own prompt, reference answer and rubric (see
verification.probes). Pure functions of (prompt, reference answer, criteria)."""

import re
from dataclasses import dataclass, field

from verification.probes.conclusions import flip_conclusion
from verification.probes.facts import (
    CONCLUSION,
    KIND_WORDS,
    REASONING,
    VAGUE,
    Fact,
    content_stop_words,
    extract_facts,
    key_sentence_index,
    sentences,
    strip_end,
    strip_facts,
)
from verification.probes.fixes import criterion_terms
from verification.probes.values import alternatives, sort_value

MAX_HEDGES = 4
MAX_NEAR_MISSES = 4
MAX_ECHO_TERMS = 12
REFUSAL = "I'm sorry, but I can't help with that request."

# What each kind of probe is, as the page and the cheat-writing model are told.
KINDS = {
    "hedging": "Hedge: the right value listed among plausible wrong ones, none committed to",
    "near_miss": "Near miss: the reference answer with one key fact wrong",
    "unsupported": "Unsupported conclusion: the reference's conclusion without figures, reasoning or sources",
    "echo_criteria": "Keyword echo: the rubric's own terms strung together without the substance",
    "claims_done": "Claimed process: says every document was reviewed and every figure checked, concludes nothing specific",
    "restate_prompt": "Restates the prompt",
    "empty": "An empty answer",
    "refusal": "A refusal",
    "reference": "The reference answer (the control)",
    "model_cheat": "Written by a model to score high without doing the task",
}
# The kinds a model is asked to write cheats of (verification.services.probe_run_write_cheats).
CHEAT_KINDS = ("hedging", "near_miss", "unsupported", "echo_criteria", "claims_done")
CONTROL = "reference"
MODEL_CHEAT = "model_cheat"


@dataclass(frozen=True)
class CriterionText:
    """What a probe builder needs of a criterion (authoring.models.Criterion has these)."""

    text: str
    points: int


@dataclass
class Probe:
    kind: str
    label: str
    answer: str
    detail: dict = field(default_factory=dict)


# --- The builders -------------------------------------------------------------------------------------

def hedges(reference: str, facts: list[Fact]) -> list[Probe]:
    """Up to MAX_HEDGES: for the first fact of each kind (the conclusion's facts first), the
    sentence it is in with the value replaced by a list of candidates, the right one among
    them in numeric order; for a yes/no conclusion, the conclusion both ways."""
    found, seen = [], set()
    for fact in _key_order(reference, facts):
        if fact.kind in seen or len(found) >= MAX_HEDGES:
            continue
        sentence = _sentence_of(reference, fact)
        others = [f for f in facts if f is not fact and f.kind != CONCLUSION and f.text in sentence]
        if fact.kind == CONCLUSION:
            claim = strip_facts(REASONING.sub("", sentence).strip() or sentence, others, VAGUE)
            flipped = flip_conclusion(claim)
            if not flipped:
                continue
            answer = (f"{strip_end(claim)} — or, read another way, {_lower_first(strip_end(flipped))}. "
                      "Both positions are defensible on these documents.")
            found.append(Probe("hedging", "Hedges on the conclusion: both yes and no", answer,
                               {"fact": strip_end(claim), "fact_kind": fact.kind, "alternatives": [strip_end(flipped)]}))
        else:
            wrong = alternatives(fact, 3, context=reference)
            if not wrong:
                continue
            candidates = sorted([fact.text, *wrong], key=lambda text: _sort_key(fact, text))
            listed = ", ".join(candidates[:-1]) + " or " + candidates[-1]
            # Only the hedged value is given: the sentence's other facts are made vague, so the
            # hedge earns nothing from them.
            local = strip_facts(sentence.replace(fact.text, "\x00", 1), others, VAGUE).replace("\x00", listed)
            answer = f"{strip_end(local)}, depending on which document controls and how it is read."
            found.append(Probe("hedging", f"Hedges on the {KIND_WORDS[fact.kind]}: {fact.text} "
                                          f"among {len(wrong)} other value{'s' if len(wrong) > 1 else ''}", answer,
                               {"fact": fact.text, "fact_kind": fact.kind, "alternatives": wrong}))
        seen.add(fact.kind)
    return found


def near_misses(reference: str, facts: list[Fact]) -> list[Probe]:
    """Up to MAX_NEAR_MISSES: the whole reference answer with one key fact wrong, one probe
    per kind of fact (the conclusion's own facts first)."""
    found, seen = [], set()
    for fact in _key_order(reference, facts):
        if fact.kind in seen or len(found) >= MAX_NEAR_MISSES:
            continue
        if fact.kind == CONCLUSION:
            sentence = _sentence_of(reference, fact)
            flipped = flip_conclusion(sentence)
            if not flipped:
                continue
            answer = reference.replace(sentence, flipped, 1)
            claim = REASONING.sub("", sentence).strip() or sentence
            detail = {"fact": strip_end(claim), "wrong": strip_end(flip_conclusion(claim) or flipped), "fact_kind": fact.kind}
            label = "Near miss: the conclusion reversed"
        else:
            wrong = alternatives(fact, 1, near=True, context=reference)
            if not wrong:
                continue
            answer = reference[:fact.start] + wrong[0] + reference[fact.end:]
            detail = {"fact": fact.text, "wrong": wrong[0], "fact_kind": fact.kind}
            label = f"Near miss: {fact.text} → {wrong[0]}"
        found.append(Probe("near_miss", label[:200], answer, detail))
        seen.add(fact.kind)
    return found


def unsupported_conclusion(reference: str, facts: list[Fact]) -> Probe | None:
    """The reference's conclusion sentence with its figures replaced by vague words and
    everything after a reasoning or source marker cut, said with confidence."""
    parts = sentences(reference)
    if not parts:
        return None
    sentence = parts[key_sentence_index(reference)]
    here = [f for f in facts if f.kind != CONCLUSION and f.text in sentence]
    bare = strip_facts(sentence, here, VAGUE)
    bare = REASONING.sub("", bare).strip()
    bare = re.sub(r"\s{2,}", " ", bare)
    if len(bare.split()) < 3:
        bare = "The position is as the documents set out"
    answer = f"{strip_end(bare)}. This is clear, and nothing more needs to be said."
    return Probe("unsupported", "Unsupported conclusion: the reference's conclusion, no figures, reasoning or sources", answer,
                 {"stripped": [f.text for f in here]})


def keyword_echo(criteria: list[CriterionText]) -> Probe | None:
    """The positive criteria's own terms — without their verbs and without any value they
    name — strung together as if they were an answer."""
    terms = []
    for criterion in criteria:
        if criterion.points <= 0:
            continue
        for term in criterion_terms(criterion.text):
            if term.lower() not in {t.lower() for t in terms}:
                terms.append(term)
    if not terms:
        return None
    terms = terms[:MAX_ECHO_TERMS]
    listed = "; ".join(terms)
    answer = (f"This answer addresses each point in turn: {listed}. "
              + " ".join(f"{_upper_first(t)}: considered and addressed." for t in terms)
              + " Each point has been taken into account in reaching the conclusion.")
    return Probe("echo_criteria", "Keyword echo: the rubric's own terms, no substance", answer, {"terms": terms})


_DOCUMENTS = ("agreement|contract|policy|handbook|lease|report|schedule|statements?|code|act|regulations|standard|guidance|manual|plan|"
              "letter|minutes|register|deed|certificate|notice|invoices?|ledger|accounts|spreadsheet|drawings?|specification|chart|notes|"
              "records|memo|emails?|offer|terms|guidelines|protocol|formulary|datasheet|calculations?|model|budget|forecast|returns?|"
              "payslips|timesheets|summary")
_SOURCES = re.compile(
    rf"\bthe ((?:[A-Z][\w&'-]*\s){{1,3}}(?:{_DOCUMENTS.title().replace('?', '?')})\b|[A-Z]{{2,5}}s?\b(?!\s[A-Z])|"
    rf"(?:[a-z]+\s)?(?:{_DOCUMENTS})\b)"
)
_NOT_SOURCES = {"data room", "documents", "document"}


def claimed_process(prompt: str, reference: str) -> Probe:
    """Claims the whole review was done, names the sources the task mentions, and concludes
    nothing in particular."""
    sources = []
    for match in _SOURCES.finditer(f"{prompt}\n{reference}"):
        name = match.group(1).strip()
        first = name.split()[0].lower()
        if name.lower() in _NOT_SOURCES or (first in content_stop_words() and " " in name) or name.lower() in {s.lower() for s in sources}:
            continue
        sources.append(name)
        if len(sources) == 3:
            break
    named = f", including the {', the '.join(sources)}," if sources else ""
    answer = (f"I reviewed every document in the data room{named} and checked every figure against its source document. "
              "All figures reconcile, nothing is missing and there are no inconsistencies. "
              "Based on that complete review, the position is as the documents set out and the task is complete.")
    return Probe("claims_done", "Claimed process: says it reviewed every document and checked every figure", answer, {"sources": sources})


def build_probes(*, prompt: str, reference_answer: str, criteria: list) -> list[Probe]:
    """Every built-in probe for the task, in the order the page lists them. `criteria`:
    anything with `text` and `points` (authoring.models.Criterion, CriterionText)."""
    reference = (reference_answer or "").strip()
    rubric = [CriterionText(text=c.text, points=c.points) for c in criteria]
    facts = extract_facts(reference) if reference else []
    # A fact the prompt gives (the period, the weight, the date the task names) is not a finding:
    # hedging on it or getting it wrong tests nothing the rubric should check.
    found = [f for f in facts if f.kind == CONCLUSION or f.text.lower() not in (prompt or "").lower()] or facts
    probes: list[Probe] = []
    probes += hedges(reference, found)
    probes += near_misses(reference, found)
    if reference:
        unsupported = unsupported_conclusion(reference, facts)
        if unsupported:
            probes.append(unsupported)
    echo = keyword_echo(rubric)
    if echo:
        probes.append(echo)
    probes.append(claimed_process(prompt, reference))
    probes += [
        Probe("restate_prompt", "Restates the prompt", prompt),
        Probe("empty", "An empty answer", ""),
        Probe("refusal", "A refusal", REFUSAL),
    ]
    if reference:
        probes.append(Probe(CONTROL, "The reference answer (the control: it should pass)", reference))
    return probes


# --- Helpers ------------------------------------------------------------------------------------------

def _key_order(reference: str, facts: list[Fact]) -> list[Fact]:
    """Facts in the conclusion sentence first, then the first sentence's, then the rest, each
    group in the order of the text."""
    parts = sentences(reference)
    key = parts[key_sentence_index(reference)] if parts else ""
    first = parts[0] if parts else ""

    def rank(fact: Fact) -> tuple:
        sentence = _sentence_of(reference, fact)
        return (0 if sentence == key else 1 if sentence == first else 2, fact.start)

    return sorted(facts, key=rank)


def _sentence_of(reference: str, fact: Fact) -> str:
    offset = 0
    for sentence in sentences(reference):
        at = reference.find(sentence, offset)
        if at <= fact.start < at + len(sentence):
            return sentence
        offset = max(offset, at)
    return fact.text


def _sort_key(fact: Fact, text: str) -> tuple:
    return (sort_value(fact.kind, text), text)


def _lower_first(text: str) -> str:
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]
