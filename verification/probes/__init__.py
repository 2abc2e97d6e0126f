"""The built-in reward-hacking probes, built from the task's own material: pure functions of
(prompt, reference answer, criteria), no database and no model. verification.services
stores what `build_probes` returns and queues each probe's grade; verification.selectors
uses `suggest_tightening` and `suggest_pitfall` (fixes.py) to say how to fix a criterion a
probe fooled.

The facts of the reference answer (facts.py: amounts, percentages, quantities, dates,
durations, clause numbers, parties, the yes/no conclusion; values.py: plausible wrong values;
conclusions.py: reversing a yes/no) drive the probes that need substance (builders.py):

- hedge: one per kind of fact — the reference's own sentence with the right value, in its
  own wording and unit, listed among plausible wrong ones (or a conclusion both ways);
- near miss: the reference answer with one key fact wrong (a number off, a date or
  deadline moved, a clause renumbered, a party swapped, the conclusion reversed);
- unsupported conclusion: the reference's conclusion with its figures, reasoning and
  sources stripped;
- keyword echo: the rubric's own terms strung together, without a value;
- claimed process: says every document was reviewed and every figure checked, and
  concludes nothing in particular;
- restated prompt, empty answer, refusal;
- the reference answer itself, as the control a near miss is measured against (never
  flagged: it is what the rubric should reward).
"""

from verification.probes.builders import (
    CHEAT_KINDS,
    CONTROL,
    KINDS,
    MODEL_CHEAT,
    CriterionText,
    Probe,
    build_probes,
    claimed_process,
    hedges,
    keyword_echo,
    near_misses,
    unsupported_conclusion,
)
from verification.probes.fixes import criterion_terms, criterion_topic, evidence_for, suggest_pitfall, suggest_tightening

__all__ = [
    "CHEAT_KINDS",
    "CONTROL",
    "KINDS",
    "MODEL_CHEAT",
    "CriterionText",
    "Probe",
    "build_probes",
    "claimed_process",
    "criterion_terms",
    "criterion_topic",
    "evidence_for",
    "hedges",
    "keyword_echo",
    "near_misses",
    "suggest_pitfall",
    "suggest_tightening",
    "unsupported_conclusion",
]
