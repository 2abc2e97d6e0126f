"""How to fix a criterion a probe fooled: the criterion tightened with the evidence of the
reference answer it lacks, and a pitfall (negative points) that a probe like it would meet;
and what a criterion is about (its topic and terms, which the keyword echo strings together).
Pure functions; verification.rubric_checks calls them for the page."""

import re

from verification.probes.conclusions import PREDICATE
from verification.probes.facts import (
    CONCLUSION,
    KIND_WORDS,
    VAGUE,
    content_words,
    extract_facts,
    join_and,
    sentences,
    strip_end,
    strip_facts,
)

# Leading words of a criterion that say what the answer must do, not what about.
_CRITERION_VERBS = re.compile(
    r"^(?:(?:the\s+)?(?:answer|response|agent|memo|reply)\s+)?(?:correctly\s+|clearly\s+|explicitly\s+|accurately\s+)?"
    r"(?:states?|identif(?:y|ies)|mentions?|explains?|notes?|gives?|provides?|cites?|references?|concludes?|recommends?|"
    r"calculates?|computes?|determines?|discuss(?:es)?|address(?:es)?|considers?|confirms?|says?|lists?|names?|flags?|"
    r"describes?|summari[sz]es?|reports?|includes?|specif(?:y|ies)|advises?|performs?|reviews?|checks?|assess(?:es)?|"
    r"evaluates?|highlights?|points? out|sets? out|makes? clear|uses?|applies|apply|answers?|finds?|shows?)\b\s*"
    r"(?:that\s+|whether\s+|if\s+)?",
    re.I,
)
_DANGLING = re.compile(
    r"(?:\s+(?:of|is|are|was|at|as|to|for|in|on|by|with|from|under|and|or|the|a|an|that|being|which|=|:|-|—|–))+\s*$", re.I
)


def criterion_topic(text: str) -> str:
    """What a criterion is about: its text without the leading verb, the values it names and
    what dangles once they are gone ("States the purchase price of $12m" → "the purchase price")."""
    body = " ".join(text.split()).rstrip(".")
    verb = _CRITERION_VERBS.match(body)
    if verb:
        # "Concludes that the covenant is breached" is about whether it is: the topic, not the claim.
        claim = re.search(r"\b(?:that|whether|if)\s+$", verb.group(0), re.I)
        body = body[verb.end():]
    else:
        claim = None
    facts = [f for f in extract_facts(body) if f.kind != CONCLUSION]
    body = strip_facts(body, facts, dict.fromkeys(VAGUE, ""))
    body = re.sub(r"\([^)]*\)", "", body)
    body = re.split(r"\s*[,;:—–]\s*|\s+(?:e\.g\.|i\.e\.|such as|for example|including)\s+", body, maxsplit=1)[0]
    body = re.sub(r"\s{2,}", " ", body).strip()
    for _ in range(3):
        body = _DANGLING.sub("", body).strip()
    if claim and re.search(r"\b(?:is|are|was|were|has|have|had|can|may|must|should|will|would|does|do|did)\b", body, re.I):
        body = f"whether {body}"  # "Concludes that the covenant is breached" is about whether it is
    return body[:120]


def criterion_terms(text: str) -> list[str]:
    """The noun phrases of a criterion's topic, without the words that would make them a claim:
    "Concludes that beam B3 fails the check" → ["beam B3", "the check"]."""
    topic = re.sub(r"^whether\s+", "", criterion_topic(text))
    terms = []
    for piece in PREDICATE.split(topic):
        piece = re.sub(
            r"^(?:\s*(?:of|to|for|on|in|at|by|with|that|and|or|than|above|below|within)\b)+\s*", "", piece.strip(" ,;"), flags=re.I
        )
        piece = _DANGLING.sub("", piece).strip()
        if content_words(piece):
            terms.append(piece)
    return terms


def evidence_for(criterion_text: str, reference: str, *, fact: str = "") -> list[str]:
    """The reference answer's facts a criterion should name so that only an answer that has
    them meets it: those of the reference sentences sharing the most words with the
    criterion; for a probe that got one `fact` wrong (or hedged on it), that fact alone
    when it is one of them or nothing else relates. None the criterion names already."""
    facts = [f for f in extract_facts(reference) if f.kind != CONCLUSION] if reference else []
    wanted = content_words(criterion_text)
    parts = sentences(reference)
    overlap = [len(wanted & content_words(s)) for s in parts]
    best = max(overlap, default=0)
    related = [f.text for f in facts if best > 0 and any(overlap[i] == best and f.text in s for i, s in enumerate(parts))]
    if fact and (fact in related or not related):
        related = [fact]
    named = criterion_text.lower()
    found: list[str] = []
    for text in related:
        if text.lower() not in named and text not in found:
            found.append(text)
    return found[:3]


def suggest_tightening(*, criterion_text: str, is_check: bool, reference: str, probe_kind: str, detail: dict) -> dict:
    """How to rewrite a criterion a probe met so that only a real answer meets it:
    {"text": the criterion rewritten (None for a check, whose settings change instead),
     "evidence": [the reference's facts it should name], "why": one sentence}.

    The rewording must never fail the reference answer, nor a correct answer that says more:
    it asks for the fact the probe got wrong given as the answer (not "only one value in
    the whole answer": a correct answer names other figures too), and for unsupported
    answers one piece of the reference's evidence (not all of it)."""
    aimed = detail.get("aimed_at") or probe_kind
    fact = detail.get("fact", "") if aimed in ("hedging", "near_miss") and detail.get("fact_kind") != CONCLUSION else ""
    evidence = evidence_for(criterion_text, reference, fact=fact)
    base = strip_end(" ".join(criterion_text.split()))
    wrong = detail.get("wrong", "")
    if aimed == "near_miss" and detail.get("fact_kind") == CONCLUSION:
        why = "The near miss reversed the reference answer's conclusion, and this criterion still counted it as met."
    elif aimed == "near_miss" and wrong:
        why = f"The near miss said {wrong} where the reference answer says {detail['fact']}, and this criterion still counted it as met."
    elif aimed == "hedging":
        why = "The hedge listed the right answer among wrong ones without committing to it, and this criterion counted it as met."
    elif aimed == "unsupported":
        why = "A bare conclusion, with no figures, reasoning or sources, met this criterion."
    elif aimed == "echo_criteria":
        why = "Repeating the rubric's own words met this criterion."
    elif aimed == "claims_done":
        why = "Saying the documents were reviewed, without showing anything found, met this criterion."
    else:
        why = "An answer that does not do the task met this criterion."
    if is_check:
        target = evidence[0] if evidence else (fact or "the exact value")
        return {"text": None, "evidence": evidence,
                "why": f"{why} It is a deterministic check: make it require {target} exactly "
                       "(a regex on the whole phrase, or a numeric check with a tight tolerance)."}
    committed = "given as the answer (offering it as one of several possibilities does not meet it)"
    # A wrong value the reference itself mentions (in another role) must not be ruled out.
    rule_out = f"; giving {wrong} instead does not meet it" if wrong and wrong not in reference else ""
    if aimed in ("hedging", "near_miss") and evidence:
        text = f"{base}: {join_and(evidence)}, {committed}{rule_out}"
    elif aimed in ("hedging", "near_miss") and detail.get("fact_kind") == CONCLUSION:
        text = f"{base}, committed to one conclusion (an answer that gives both, or the opposite, does not meet it)"
    elif aimed in ("hedging", "near_miss") and fact:
        text = f"{base}, {committed}{rule_out}"
    elif len(evidence) == 1:
        text = f"{base}, supported by {evidence[0]}"
    elif evidence:
        text = f"{base}, supported by the facts that show it (at least one of {join_or(evidence)})"
    else:
        text = f"{base}, naming the specific fact, figure or source that shows it"
    return {"text": text[:5000], "evidence": evidence, "why": why}


def join_or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


_PITFALLS = {
    "hedging": "Hedges: gives several candidate values, dates or parties, or both yes and no, instead of committing to one answer",
    "unsupported": "States a conclusion without the figures, reasoning or sources that support it",
    "echo_criteria": "Lists the topics the task asks about without stating the facts, figures or conclusion",
    "claims_done": "Claims to have reviewed the documents or checked the figures without showing what was found",
    "restate_prompt": "Restates the task instead of answering it",
    "empty": "Gives no substantive answer",
    "refusal": "Gives no substantive answer",
}


def suggest_pitfall(*, probe_kind: str, detail: dict, met_points: int, reference: str = "", topic: str = "") -> dict | None:
    """A pitfall (negative points) that a probe like this one would meet, worth enough to
    cancel what it scored: {"text", "points"}; None when no wording would spare the
    reference answer. A near miss's pitfall names the wrong value itself ("Gives $53.4 million
    as the purchase price (the reference answer gives $48.5 million)"), never "a value other than $48.5 million": the reference answer,
    and any correct answer, names other amounts too, and a judge would count them."""
    aimed = detail.get("aimed_at") or probe_kind
    points = -max(1, min(100, int(met_points or 1)))
    if aimed == "near_miss" and detail.get("wrong"):
        wrong, fact = detail["wrong"], detail.get("fact", "")
        if detail.get("fact_kind") == CONCLUSION:
            text = f"Reaches the opposite conclusion to the reference answer's (e.g. “{wrong}”)"
        elif wrong in reference:
            return None  # the reference answer gives this value too, in another role
        elif topic and not topic.startswith("whether "):
            text = f"Gives {wrong} as {topic} (the reference answer gives {fact})"
        else:
            word = KIND_WORDS.get(detail.get("fact_kind"), "value")
            text = f"Gives {wrong} as the {word} where the reference answer gives {fact}"
    else:
        text = _PITFALLS.get(aimed, "Scores on the rubric's wording without doing the task")
    return {"text": text[:5000], "points": points}
