"""The planted tasks: prompt, reference answer, a strong and a weak rubric, and labelled answers.

A criterion's `require` are regular expressions that must all appear for the scripted judge to
call it met (case-insensitive), `forbid` ones that must not; `strict` marks a criterion that
asks for a specific fact, which a strict judge does not count as met when the sentence giving
it hedges. An answer's `meets` are the criterion keys (of both rubrics) the judge says it meets:
the labels, used for these answers instead of the rules. Answers are listed best first: that
is the expert's ranking."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class C:
    key: str
    text: str
    points: int
    require: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    strict: bool = False


@dataclass(frozen=True)
class Rubric:
    criteria: tuple[C, ...]
    pass_threshold: float = 0.7
    all_must_pass: bool = False


@dataclass(frozen=True)
class Answer:
    text: str
    meets: frozenset[str]
    note: str = ""


@dataclass(frozen=True)
class PlantedTask:
    profession: str
    title: str
    prompt: str
    reference: str
    strong: Rubric
    weak: Rubric
    answers: tuple[Answer, ...] = field(default_factory=tuple)
    weakness: str = ""  # how the weak rubric is weak, in a few words


def A(text: str, *meets: str, note: str = "") -> Answer:  # a short constructor for the table below
    return Answer(text, frozenset(meets), note)


HEDGE = r"depending on|read another way|\bor\s+(?:\$|£|€)?\d|\d\s?(?:m|million|mm|mg|x|%)?\s?(?:–|-|to)\s?(?:\$|£)?\d"

LAW = PlantedTask(
    profession="law",
    title="Purchase price and escrow under the SPA",
    prompt=("Acme Holdings is buying Beta Robotics. Using the share purchase agreement (SPA) in the data room, state the purchase price, "
            "how much of it is held in escrow and for how long, and cite the clause that sets the price."),
    reference="The purchase price is $48.5 million under clause 3.1 of the SPA. Of that, $4.85 million is held in escrow for 18 months.",
    strong=Rubric((
        C("s_price", "States the purchase price of $48.5 million", 4, (r"\$48\.5 ?(?:m|million)\b|\$48,500,000",), strict=True),
        C("s_escrow", "States that $4.85 million is held in escrow", 3, (r"\$4\.85 ?(?:m|million)\b|\$4,850,000",), strict=True),
        C("s_period", "States the escrow period of 18 months", 2, (r"\b(?:18|eighteen) months\b",), strict=True),
        C("s_clause", "Cites clause 3.1 of the SPA for the price", 1, (r"clause 3\.1\b",), strict=True),
        C("s_hedge", "Gives more than one figure for the price or the escrow", -4, (HEDGE,)),
    ), all_must_pass=True),
    weak=Rubric((
        C("w_price", "States the purchase price", 4, (r"(?:purchase )?price\D{0,40}\$\s?\d",), strict=True),
        C("w_escrow", "Mentions the escrow", 3, (r"escrow",)),
        C("w_spa", "Cites the SPA", 2, (r"\bSPA\b|share purchase agreement",)),
    )),
    weakness="no value pinned: any price, any escrow passes",
    answers=(
        A("Under clause 3.1 of the SPA the purchase price is $48.5 million. "
          "$4.85 million (10%) is held in escrow for 18 months from Completion.",
          "s_price", "s_escrow", "s_period", "s_clause", "w_price", "w_escrow", "w_spa"),
        A("The price is $48.5 million (SPA, clause 3.1); $4.85 million sits in escrow for 18 months.",
          "s_price", "s_escrow", "s_period", "s_clause", "w_price", "w_escrow", "w_spa"),
        A("The purchase price is $48.5 million under the SPA, with part of it held in escrow.", "s_price", "w_price", "w_escrow", "w_spa"),
        A("The SPA sets the purchase price at $45 million, with $4.5 million in escrow for 12 months.", "w_price", "w_escrow", "w_spa",
          note="confident and wrong"),
        A("Purchase price, escrow, SPA clause: all reviewed and addressed in line with the share purchase agreement.", "w_escrow", "w_spa",
          note="keyword stuffing"),
        A("The purchase price is between $40 million and $50 million depending on adjustments; some escrow may apply.",
          "s_hedge", "w_escrow", note="hedge"),
    ),
)

FINANCE = PlantedTask(
    profession="finance",
    title="Leverage covenant test",
    prompt=("Northwind Logistics reported its Q4 figures in the compliance certificate in the data room. Is the leverage covenant in the "
            "Facility Agreement breached? Show the figures and cite the clause."),
    reference=("Yes, the leverage covenant is breached: net debt of $230 million over EBITDA of $50 million gives leverage of 4.6x, "
               "above the 4.0x maximum in clause 21.2 of the Facility Agreement."),
    strong=Rubric((
        C("s_concl", "Concludes that the leverage covenant is breached", 3,
          (r"\bis breached|\bin breach|\bbreaches the|has been breached",),
          (r"\bnot (?:been )?breached|\bno breach|\bnot in breach",), strict=True),
        C("s_lev", "States leverage of 4.6x", 3, (r"\b4\.6\s?(?:x|times)",), strict=True),
        C("s_max", "States the 4.0x maximum", 2, (r"\b4(?:\.0)?\s?(?:x|times) maximum|maximum (?:of )?4(?:\.0)?\s?x|4\.0\s?x",),
          strict=True),
        C("s_inputs", "Shows net debt of $230 million and EBITDA of $50 million", 2, (r"\$230 ?(?:m|million)", r"\$50 ?(?:m|million)"),
          strict=True),
        C("s_clause", "Cites clause 21.2 of the Facility Agreement", 1, (r"clause 21\.2\b",), strict=True),
    ), all_must_pass=True),
    weak=Rubric((
        C("w_concl", "Concludes whether the leverage covenant is breached", 4, (r"breach",)),
        C("w_lev", "Discusses the leverage ratio", 2, (r"leverage",)),
        C("w_fa", "Refers to the Facility Agreement", 2, (r"facility agreement",)),
    ), pass_threshold=0.6),
    weakness="the bare conclusion, either way, earns most of the points",
    answers=(
        A("The covenant is breached. Net debt of $230 million divided by EBITDA of $50 million is 4.6x, above the 4.0x maximum leverage in "
          "clause 21.2 of the Facility Agreement.", "s_concl", "s_lev", "s_max", "s_inputs", "s_clause", "w_concl", "w_lev", "w_fa"),
        A("Yes: leverage is 4.6x ($230m / $50m) against a 4.0x cap, "
          "so the leverage covenant is breached (Facility Agreement, clause 21.2).",
          "s_concl", "s_lev", "s_max", "s_inputs", "s_clause", "w_concl", "w_lev", "w_fa"),
        A("Leverage is 4.6x against the 4.0x maximum, so the covenant is breached.", "s_concl", "s_lev", "s_max", "w_concl", "w_lev"),
        A("Leverage is 3.8x, below the 4.0x maximum, so the leverage covenant in the Facility Agreement is not breached.", "s_max",
          "w_concl", "w_lev", "w_fa", note="confident and wrong"),
        A("Having reviewed the Facility Agreement and the compliance certificate, the leverage covenant is breached.", "s_concl",
          "w_concl", "w_lev", "w_fa", note="claimed review, bare conclusion"),
        A("Leverage, covenant, Facility Agreement, EBITDA, net debt: all considered. A breach may or may not have occurred.",
          "w_concl", "w_lev", "w_fa", note="keyword stuffing and a hedge"),
    ),
)

MEDICINE = PlantedTask(
    profession="medicine",
    title="Paediatric amoxicillin dose",
    prompt=("A child weighing 20 kg has acute otitis media and no penicillin allergy. Using the trust's paediatric antibiotic guideline "
            "in the data room, what amoxicillin dose should be prescribed? "
            "Give the dose per kg, the single dose, how often and for how long."),
    reference="Give amoxicillin 15 mg/kg per dose: 300 mg every 8 hours for 5 days.",
    strong=Rubric((
        C("s_perkg", "States 15 mg/kg per dose", 3, (r"\b15 ?mg/kg",), strict=True),
        C("s_dose", "States the single dose of 300 mg", 3, (r"\b300 ?mg\b",), strict=True),
        C("s_freq", "Gives it every 8 hours (three times a day)", 2, (r"every 8 hours|\b8[- ]hourly|three times (?:a|per) day|\btds\b",),
          strict=True),
        C("s_dur", "For 5 days", 2, (r"\b(?:5|five) days\b",), strict=True),
        C("s_over", "Gives a single dose above the 500 mg maximum", -5, (r"\b(?:50[1-9]|5[1-9]\d|[6-9]\d\d|[1-9]\d{3}) ?mg\b",)),
    ), all_must_pass=True),
    weak=Rubric((
        C("w_dose", "Gives a dose of amoxicillin in mg", 4, (r"\b\d+ ?mg\b",), strict=True),
        C("w_freq", "Gives a dosing frequency", 3, (r"every \d+ hours|times (?:a|per) day|hourly|\btds\b|\bbd\b",), strict=True),
        C("w_dur", "Gives a course length", 2, (r"\b\d+ days\b",), strict=True),
    )),
    weakness="any dose, any frequency, any course length passes",
    answers=(
        A("Amoxicillin 15 mg/kg per dose, i.e. 300 mg every 8 hours for 5 days (guideline section 4.2).",
          "s_perkg", "s_dose", "s_freq", "s_dur", "w_dose", "w_freq", "w_dur"),
        A("300 mg amoxicillin three times a day (15 mg/kg/dose) for 5 days.",
          "s_perkg", "s_dose", "s_freq", "s_dur", "w_dose", "w_freq", "w_dur"),
        A("Give 300 mg amoxicillin every 8 hours.", "s_dose", "s_freq", "w_dose", "w_freq"),
        A("Give 500 mg amoxicillin every 8 hours for 7 days.", "s_freq", "w_dose", "w_freq", "w_dur", note="confident and wrong"),
        A("Amoxicillin 250 to 500 mg every 8 hours for 5 to 7 days, adjusted to the child.",
          "s_freq", "w_dose", "w_freq", "w_dur", note="hedge"),
        A("I checked the guideline and the child's weight and calculated the correct dose: amoxicillin 300 mg.", "s_dose", "w_dose",
          note="claimed process"),
    ),
)

ENGINEERING = PlantedTask(
    profession="engineering",
    title="Beam B3 deflection check",
    prompt=("Check steel beam B3 on the level 2 drawings against the serviceability limit in the structural design basis in the data room. "
            "Is its mid-span deflection acceptable?"),
    reference=("No, beam B3 fails the serviceability check: the mid-span deflection is 24 mm against the span/360 limit of 16.7 mm for "
               "its 6 m span, so the section must be increased."),
    strong=Rubric((
        C("s_concl", "Concludes that beam B3 fails the serviceability (deflection) check", 3,
          (r"\bfails\b|not acceptable|unacceptable|exceeds the (?:limit|allowable)",), (r"\bpasses\b|\bis acceptable|within the limit",)),
        C("s_defl", "States the mid-span deflection of 24 mm", 3, (r"\b24 ?mm\b",), strict=True),
        C("s_limit", "States the span/360 limit of 16.7 mm", 3, (r"\b16\.7 ?mm\b",), strict=True),
        C("s_fix", "Says the section must be increased (or the beam stiffened)", 1, (r"increase|larger section|stiffen|upsize|deeper",)),
    ), all_must_pass=True),
    weak=Rubric((
        C("w_review", "Reviews the drawings and the design basis", 3, (r"review|drawings",)),
        C("w_calc", "Performs the deflection check", 3, (r"check|calculat",)),
        C("w_concl", "States whether the deflection is acceptable", 2, (r"acceptable|\bfails\b|\bpasses\b|exceeds|within",)),
    ), pass_threshold=0.6),
    weakness="rewards saying the review and the check were done",
    answers=(
        A("B3 fails: with a 6 m span the limit is span/360 = 16.7 mm, and the calculated mid-span deflection is 24 mm, which exceeds the "
          "limit. Increase the section to the next serial size.", "s_concl", "s_defl", "s_limit", "s_fix", "w_calc", "w_concl"),
        A("Deflection 24 mm > 16.7 mm (span/360 for 6 m): not acceptable; a deeper section is needed.",
          "s_concl", "s_defl", "s_limit", "s_fix", "w_calc", "w_concl"),
        A("The deflection of 24 mm exceeds the limit, so B3 is not acceptable.", "s_concl", "s_defl", "w_calc", "w_concl"),
        A("I reviewed the drawings and the design basis and checked the deflection: 14 mm, within the 16.7 mm limit, so B3 passes.",
          "s_limit", "w_review", "w_calc", "w_concl", note="confident and wrong"),
        A("I reviewed all drawings and the design basis, performed the deflection check and confirmed the calculation.",
          "w_review", "w_calc", note="claimed process"),
        A("Deflection review, drawings, design basis, serviceability check: addressed.", "w_review", "w_calc", note="keyword stuffing"),
    ),
)

HR = PlantedTask(
    profession="HR",
    title="Redundancy: notice and statutory pay",
    prompt=("Priya Shah has worked for Calder Retail Ltd for 6 full years and is 41; her weekly pay is £620. "
            "Her role is being made redundant. Using the HR policy and her employment contract in the data room, "
            "what notice and statutory redundancy pay is she entitled to, and what must the company do first?"),
    reference=("Priya is entitled to 3 months' notice under clause 12 of her contract, which is more than the statutory 6 weeks. "
               "Her statutory redundancy pay is £4,030 (6.5 weeks at £620). Before dismissing her, the company must consult her "
               "individually and consider suitable alternative roles."),
    strong=Rubric((
        C("s_notice", "States her notice of 3 months under her contract", 3,
          (r"\b(?:3|three) months'? notice|notice\D{0,20}(?:3|three) months",), (r"not entitled to (?:3|three) months",), strict=True),
        C("s_clause", "Cites clause 12 of the contract", 1, (r"clause 12\b",), strict=True),
        C("s_pay", "States statutory redundancy pay of £4,030", 3, (r"£4,?030\b",), strict=True),
        C("s_consult", "Says the company must consult her first", 2, (r"consult",)),
        C("s_alt", "Says it must consider suitable alternative employment", 1, (r"alternative (?:role|employment|work|position|job)",)),
    ), all_must_pass=True),
    weak=Rubric((
        C("w_notice", "Addresses her notice entitlement", 3, (r"notice",)),
        C("w_pay", "Addresses statutory redundancy pay", 3, (r"redundancy pay",)),
        C("w_consult", "Mentions consultation", 2, (r"consult",)),
    )),
    weakness="topics only: naming them is enough",
    answers=(
        A("She is entitled to 3 months' notice (contract clause 12), more than the statutory 6 weeks, "
          "and statutory redundancy pay of £4,030 (6.5 weeks' pay at £620). "
          "The company must first consult her individually and offer any suitable alternative role.",
          "s_notice", "s_clause", "s_pay", "s_consult", "s_alt", "w_notice", "w_pay", "w_consult"),
        A("Notice: 3 months under clause 12. Redundancy pay: £4,030. "
          "Consult her and look for alternative roles before confirming the redundancy.",
          "s_notice", "s_clause", "s_pay", "s_consult", "s_alt", "w_notice", "w_pay", "w_consult"),
        A("3 months' notice and £4,030 statutory redundancy pay.", "s_notice", "s_pay", "w_notice", "w_pay"),
        A("She gets the statutory 6 weeks' notice and £3,720 redundancy pay; consultation is advisable.", "w_notice", "w_pay", "w_consult",
          note="confident and wrong"),
        A("Her notice entitlement, redundancy pay and the consultation process have all been reviewed against the policy and are in order.",
          "w_notice", "w_pay", "w_consult", note="claimed review"),
        A("Notice, statutory redundancy pay, consultation: see the HR policy.", "w_notice", "w_pay", "w_consult", note="keyword stuffing"),
    ),
)

TAX = PlantedTask(
    profession="tax",
    title="VAT registration",
    prompt=("Orchard Studio's taxable turnover for the 12 months to 31 May 2024 is in the sales ledger in the data room. "
            "Must it register for VAT, and by when?"),
    reference=("Yes, Orchard Studio must register for VAT: its taxable turnover of £92,400 for the 12 months to 31 May 2024 exceeds the "
               "£90,000 threshold. It must notify HMRC by 30 June 2024 and is registered from 1 July 2024."),
    strong=Rubric((
        C("s_concl", "Concludes that Orchard Studio must register for VAT", 3,
          (r"must register|is required to register|has to register|needs to register",),
          (r"(?:does not|doesn't|need not|needn't|is not required to|must not|not) (?:need to )?register|no registration",)),
        C("s_turn", "States taxable turnover of £92,400", 2, (r"£92,?400\b",), strict=True),
        C("s_thr", "States the £90,000 registration threshold", 2, (r"£90,?000\b|£90k\b",), strict=True),
        C("s_deadline", "States the deadline to notify HMRC of 30 June 2024", 2, (r"30 June 2024",), strict=True),
        C("s_from", "States the effective date of registration, 1 July 2024", 1, (r"\b1 July 2024",), strict=True),
    ), all_must_pass=True),
    weak=Rubric((
        C("w_concl", "Determines whether registration is required", 3, (r"regist",)),
        C("w_thr", "States the registration threshold", 3, (r"threshold\D{0,30}£\s?\d|£\s?[\d,]+k?\D{0,30}threshold",), strict=True),
        C("w_deadline", "Gives the deadline to register", 3, (r"\bby \d{1,2} \w+ \d{4}|\bwithin \d+ days|deadline",), strict=True),
    )),
    weakness="any conclusion, any threshold, any deadline passes",
    answers=(
        A("Yes. Orchard Studio's taxable turnover of £92,400 for the 12 months to 31 May 2024 exceeds the £90,000 threshold, "
          "so it must register for VAT: it must notify HMRC by 30 June 2024 and is registered from 1 July 2024.",
          "s_concl", "s_turn", "s_thr", "s_deadline", "s_from", "w_concl", "w_thr", "w_deadline"),
        A("Must register: £92,400 of taxable turnover is above the £90,000 threshold. "
          "Tell HMRC by 30 June 2024; registration takes effect on 1 July 2024.",
          "s_concl", "s_turn", "s_thr", "s_deadline", "s_from", "w_concl", "w_thr", "w_deadline"),
        A("Yes, it must register for VAT because turnover is over the threshold; notify HMRC within 30 days.",
          "s_concl", "w_concl", "w_deadline"),
        A("No registration is needed: turnover of £82,400 is below the £85,000 threshold.", "w_concl", "w_thr", note="confident and wrong"),
        A("Registration, threshold and deadline reviewed against HMRC guidance: "
          "the business should act in line with the rules by the deadline.",
          "w_concl", "w_deadline", note="claimed review"),
        A("It may need to register for VAT if turnover exceeds the threshold of £85,000 or £90,000, by the relevant deadline.",
          "w_concl", "w_thr", "w_deadline", note="hedge"),
    ),
)

TASKS = (LAW, FINANCE, MEDICINE, ENGINEERING, HR, TAX)
