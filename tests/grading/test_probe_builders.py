"""The built-in probes are built from the task's own material (verification.probes): pure
functions, no database, no model."""

import pytest

from verification.probes import CriterionText, build_probes, criterion_terms, suggest_pitfall, suggest_tightening
from verification.probes.conclusions import flip_conclusion
from verification.probes.facts import extract_facts
from verification.probes.values import alternatives

SPA = "The purchase price is $48.5 million under clause 3.1 of the SPA. Of that, $4.85 million is held in escrow for 18 months."
COVENANT = ("Yes, the leverage covenant is breached: net debt of $230 million over EBITDA of $50 million gives leverage of 4.6x, "
            "above the 4.0x maximum in clause 21.2 of the Facility Agreement.")


def kinds(text: str) -> list[tuple[str, str]]:
    return [(f.kind, f.text) for f in extract_facts(text)]


def test_facts_are_found_with_their_units_and_wording():
    assert kinds(SPA) == [("amount", "$48.5 million"), ("clause", "clause 3.1"), ("amount", "$4.85 million"), ("duration", "18 months")]
    assert kinds("Give 15 mg/kg per dose: 300 mg every 8 hours; VAT of 20% is due by 30 June 2024 (or 2024-07-01).") == [
        ("quantity", "15 mg/kg"), ("quantity", "300 mg"), ("duration", "8 hours"), ("percent", "20%"), ("date", "30 June 2024"),
        ("date", "2024-07-01")]
    assert (
        ("party", "The Lender") in kinds("The Lender may accelerate.")
        and ("party", "Acme Holdings Ltd") in kinds("Acme Holdings Ltd pays.")
    )
    assert ("clause", "Section 7.2(b)") in kinds("See Section 7.2(b).") and ("clause", "§ 1031") in kinds("Under IRC § 1031.")
    assert kinds(COVENANT)[-1][0] == "conclusion"  # "Yes, … breached" can be reversed


@pytest.mark.parametrize(("text", "near", "others"), [
    ("$48.5 million", "$53.4 million", ["$43.7 million", "$53.4 million", "$60.6 million"]),
    ("$12,000,000", "$13,200,000", ["$10,800,000", "$13,200,000", "$15,000,000"]),
    ("12.5%", "13.8%", ["11.3%", "13.8%", "15.6%"]),
    ("4.6x", "5.1x", ["4.1x", "5.1x", "5.8x"]),
    ("30 days", "45 days", ["45 days", "28 days", "60 days"]),
    ("three months", "four months", ["four months", "two months", "six months"]),
    ("15 March 2024", "22 March 2024", ["22 March 2024", "8 March 2024", "14 April 2024"]),
    ("March 15, 2024", "March 22, 2024", ["March 22, 2024", "March 8, 2024", "April 14, 2024"]),
    ("clause 21.2", "clause 21.3", ["clause 21.3", "clause 21.1", "clause 22.2"]),
])
def test_wrong_values_are_plausible_and_written_as_the_reference_writes_them(text, near, others):
    [fact] = [f for f in extract_facts(f"It is {text} in all.") if f.kind != "conclusion"]
    assert alternatives(fact, 1, near=True) == [near]
    assert alternatives(fact, 3) == others


def test_a_party_is_swapped_for_its_counterpart_or_another_party():
    lender = next(f for f in extract_facts("The Lender may accelerate.") if f.kind == "party")
    assert alternatives(lender, 1, near=True) == ["The Borrower"]
    text = "Acme Holdings Ltd pays Beta Capital LLC the price."
    acme = next(f for f in extract_facts(text) if f.text == "Acme Holdings Ltd")
    assert alternatives(acme, 1, near=True, context=text) == ["Beta Capital LLC"]


@pytest.mark.parametrize(("sentence", "reversed_"), [
    ("Yes, the leverage covenant is breached: leverage is 4.6x.", "No, the leverage covenant is not breached: leverage is 4.6x."),
    ("The non-compete is unenforceable under § 16600.", "The non-compete is enforceable under § 16600."),
    ("No, beam B3 fails the serviceability check.", "Yes, beam B3 passes the serviceability check."),
    ("Priya is entitled to 3 months' notice.", "Priya is not entitled to 3 months' notice."),
    ("The clause is not enforceable.", "The clause is enforceable."),
    ("Because leverage is 4.6x, the covenant is breached.", "Because leverage is 4.6x, the covenant is not breached."),
])
def test_a_conclusion_is_reversed_where_it_is_stated(sentence, reversed_):
    assert flip_conclusion(sentence) == reversed_


def test_a_statement_of_a_figure_is_not_taken_for_a_yes_no_conclusion():
    assert flip_conclusion("The purchase price is $48.5 million, payable at Completion.") == ""
    assert "its taxable turnover" in flip_conclusion("Yes, it must register: its taxable turnover exceeds the threshold.")


def test_the_suite_is_built_from_the_task():
    criteria = [CriterionText("States the purchase price", 4), CriterionText("Mentions the escrow", 3), CriterionText("Hedges", -4)]
    probes = build_probes(prompt="State the price and the escrow from the SPA.", reference_answer=SPA, criteria=criteria)
    by_kind: dict[str, list] = {}
    for probe in probes:
        by_kind.setdefault(probe.kind, []).append(probe)
    assert [p.kind for p in probes][-4:] == ["restate_prompt", "empty", "refusal", "reference"]
    # Several hedges: the right value in the reference's wording among wrong ones, the sentence's other facts made vague.
    assert [p.detail["fact"] for p in by_kind["hedging"]] == ["$48.5 million", "clause 3.1", "18 months"]
    assert by_kind["hedging"][0].answer == ("The purchase price is $43.7 million, $48.5 million, $53.4 million or $60.6 million "
                                            "under the relevant provision of the SPA, "
                                            "depending on which document controls and how it is read.")
    # Near misses: the whole reference with one key fact wrong.
    assert [(p.detail["fact"], p.detail["wrong"]) for p in by_kind["near_miss"]] == [
        ("$48.5 million", "$53.4 million"), ("clause 3.1", "clause 3.2"), ("18 months", "24 months")]
    assert by_kind["near_miss"][0].answer == SPA.replace("$48.5 million", "$53.4 million")
    [unsupported] = by_kind["unsupported"]
    assert unsupported.answer.startswith("The purchase price is the amount in question.") and "$" not in unsupported.answer
    [echo] = by_kind["echo_criteria"]
    assert echo.detail["terms"] == ["the purchase price", "the escrow"] and "$" not in echo.answer  # no pitfall's terms, no value
    [claimed] = by_kind["claims_done"]
    assert "including the SPA" in claimed.answer and "checked every figure" in claimed.answer
    assert by_kind["reference"][0].answer == SPA


def test_facts_the_prompt_gives_are_not_hedged_on_or_got_wrong():
    reference = "Yes, it must register: turnover of £92,400 for the 12 months to 31 May 2024 exceeds the £90,000 threshold."
    probes = build_probes(prompt="Turnover for the 12 months to 31 May 2024 is in the ledger. Must it register?",
                          reference_answer=reference, criteria=[CriterionText("Concludes whether it must register", 3)])
    facts = {p.detail.get("fact") for p in probes if p.kind in ("hedging", "near_miss")}
    assert "£92,400" in facts and "12 months" not in facts and "31 May 2024" not in facts


def test_without_a_reference_answer_the_task_independent_probes_remain():
    probes = build_probes(prompt="Do the thing.", reference_answer="", criteria=[CriterionText("Does the thing well", 2)])
    assert [p.kind for p in probes] == ["echo_criteria", "claims_done", "restate_prompt", "empty", "refusal"]


def test_a_claim_in_a_criterion_is_echoed_as_its_topic_not_as_the_claim():
    assert criterion_terms("Concludes that beam B3 fails the serviceability (deflection) check") == ["beam B3", "the serviceability check"]
    assert criterion_terms("Concludes that the leverage covenant is breached") == ["the leverage covenant"]
    assert criterion_terms("States the purchase price of $48.5 million") == ["the purchase price"]


def test_the_suggested_fixes_name_the_missing_evidence_and_a_pitfall():
    near_miss = {"fact": "$48.5 million", "wrong": "$53.4 million", "fact_kind": "amount"}
    fix = suggest_tightening(
        criterion_text="States the purchase price", is_check=False, reference=SPA, probe_kind="near_miss", detail=near_miss
    )
    assert fix["evidence"] == ["$48.5 million"] and fix["text"].startswith("States the purchase price: $48.5 million, given as the answer")
    escrow = suggest_tightening(criterion_text="Mentions the escrow", is_check=False, reference=SPA, probe_kind="echo_criteria", detail={})
    assert escrow == {"text": "Mentions the escrow, supported by the facts that show it (at least one of $4.85 million or 18 months)",
                      "evidence": ["$4.85 million", "18 months"],
                      "why": "Repeating the rubric's own words met this criterion."}
    check = suggest_tightening(
        criterion_text="Mentions 12", is_check=True, reference=SPA, probe_kind="hedging", detail={"fact": "$48.5 million"}
    )
    assert check["text"] is None and "deterministic check" in check["why"]
    assert suggest_pitfall(probe_kind="near_miss", detail=near_miss, met_points=9) == {
        "text": "Gives $53.4 million as the amount where the reference answer gives $48.5 million", "points": -9}
    assert suggest_pitfall(probe_kind="model_cheat", detail={"aimed_at": "claims_done"}, met_points=200)["points"] == -100


def test_a_suggested_fix_never_rules_out_what_a_correct_answer_also_says():
    """The fixes are one click away: a wording that a correct answer would fail, or a pitfall it
    would meet, makes the rubric worse. A correct answer names other amounts than the one the
    near miss got wrong ($4.85 million beside $48.5 million): the fix asks for the right value
    as the answer and rules out the wrong one, never "any other value"."""
    near_miss = {"fact": "$48.5 million", "wrong": "$53.4 million", "fact_kind": "amount"}
    fix = suggest_tightening(criterion_text="States the purchase price", is_check=False, reference=SPA,
                             probe_kind="near_miss", detail=near_miss)
    assert fix["text"] == ("States the purchase price: $48.5 million, given as the answer (offering it as one of several "
                           "possibilities does not meet it); giving $53.4 million instead does not meet it")
    pitfall = suggest_pitfall(probe_kind="near_miss", detail=near_miss, met_points=4, reference=SPA, topic="the purchase price")
    assert pitfall == {"text": "Gives $53.4 million as the purchase price (the reference answer gives $48.5 million)", "points": -4}
    for text in (fix["text"], pitfall["text"]):
        assert "other than" not in text and "lists other values" not in text
    # The near miss turned 18 months into 12 months, a figure the reference itself gives for something else:
    # no pitfall (the reference would meet it) and no "giving 12 months instead" in the wording.
    both = SPA + " Completion is due within 12 months."
    slipped = {"fact": "18 months", "wrong": "12 months", "fact_kind": "duration"}
    assert suggest_pitfall(probe_kind="near_miss", detail=slipped, met_points=3, reference=both, topic="the escrow period") is None
    tightened = suggest_tightening(criterion_text="States the escrow period", is_check=False, reference=both,
                                   probe_kind="near_miss", detail=slipped)
    assert tightened["text"].startswith("States the escrow period: 18 months, given as the answer") and "12 months" not in tightened["text"]
