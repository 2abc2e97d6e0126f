"""The checks that say a rubric can be gamed, over rows the selectors have already read (no
access rule here; verification.selectors calls these):

- probe flags: a probe is flagged when it passes or scores the run's flag score or more;
  a near miss (one key fact wrong) when it passes or scores as much as the reference answer
  (the control), since every other fact in it is right; the control itself never is;
- the fooled criteria of a flagged probe, and for each a suggested fix (the criterion
  tightened with the reference's missing evidence) plus a pitfall to add (verification.probes);
- the ranking check: besides a low Kendall tau-b, the expert's bottom third scoring within
  SEPARATION_MARGIN of the top third, most answers at the maximum score, a probe that passes;
  with the criteria that cause it (met by the answers the expert ranked low).
"""

from statistics import mean

from authoring.models import Criterion, GraderKind
from rollouts.models import Grade, GradeStatus, ProbeAnswer
from verification.probes import CONTROL, KINDS, criterion_topic, suggest_pitfall, suggest_tightening
from verification.probes.facts import content_words, sentences

LOW_AGREEMENT = 0.3
SEPARATION_MARGIN = 0.1  # the bottom third's mean score this close to the top third's: no separation
CEILING_SHARE = 0.5  # more than this share of the ranked answers at the maximum score
MAX_SCORE = 1.0 - 1e-9


def aimed_at(probe: ProbeAnswer) -> str:
    """The kind of probe this is, or, for a model-written cheat, the kind it was asked to be."""
    return (probe.detail or {}).get("aimed_at") or probe.kind


def probe_flagged(probe: ProbeAnswer, grade: Grade | None, *, flag_score: float, reference_score: float | None) -> bool:
    if probe.kind == CONTROL or grade is None or grade.status != GradeStatus.GRADED:
        return False
    score = grade.score or 0.0
    if grade.passed:
        return True
    if aimed_at(probe) == "near_miss" and reference_score is not None:
        # Every other fact of a near miss is right, so it may score well on a sound rubric; it is
        # flagged when no criterion noticed the wrong fact: it lost nothing against the reference.
        return score > 0 and score >= reference_score - 1e-9
    return score >= flag_score


def fooled_criteria(probe: ProbeAnswer, met: list[Criterion], reference: str) -> list[Criterion]:
    """The positive criteria a flagged probe met; for a near miss (or a hedge) only those about
    the fact it got wrong, when some are (the rest are met because the rest is right)."""
    fact = (probe.detail or {}).get("fact", "")
    if aimed_at(probe) not in ("near_miss", "hedging") or not fact or not met:
        return met
    around = next((s for s in sentences(reference) if fact in s), fact)
    words = content_words(around) | content_words(fact)
    overlap = {c.pk: len(content_words(c.text) & words) for c in met}
    best = max(overlap.values())
    return [c for c in met if overlap[c.pk] == best] if best > 0 else met


def probe_fixes(probe: ProbeAnswer, grade: Grade, fooled: list[Criterion], reference: str) -> tuple[list[dict], dict]:
    """For each fooled criterion, how to tighten it; and a pitfall worth what the probe scored."""
    detail = probe.detail or {}
    fixes = [{"criterion": c, **suggest_tightening(criterion_text=c.text, is_check=c.grader_kind == GraderKind.CHECK, reference=reference,
                                                   probe_kind=probe.kind, detail=detail)} for c in fooled]
    topic = criterion_topic(fooled[0].text) if fooled else ""
    return fixes, suggest_pitfall(probe_kind=probe.kind, detail=detail, met_points=grade.met_points, reference=reference, topic=topic)


def probe_kind_label(probe: ProbeAnswer) -> str:
    return KINDS.get(aimed_at(probe), probe.kind)


# --- The ranking check ------------------------------------------------------------------------------

def ranking_warnings(*, ranked: list[int], scores: dict[int, float], tau: float | None, verdicts: dict[tuple[int, int], bool],
                     criteria: list[Criterion], passing_probes: list[str]) -> dict:
    """What the ranking says about the rubric. `ranked`: rollout ids, the expert's best first
    (at least three); `scores`: the rubric's; `verdicts`: (rollout id, criterion id) → met;
    `passing_probes`: the labels of the probes that pass this rubric version.
    Answers {"warnings": [{"kind", "text"}], "culprits": [...], "top_mean", "bottom_mean"}."""
    warnings = []
    n = len(ranked)
    third = max(1, n // 3)
    top, bottom = ranked[:third], ranked[-third:]
    top_mean, bottom_mean = mean(scores[pk] for pk in top), mean(scores[pk] for pk in bottom)
    if tau is None:
        warnings.append(
            {"kind": "same_score", "text": "The rubric gives every ranked trajectory the same score: it cannot tell them apart."}
        )
    elif tau < LOW_AGREEMENT:
        warnings.append(
            {"kind": "low_tau", "text": f"Low agreement (tau {tau:.2f}): the rubric does not order these trajectories the way you do."}
        )
    if tau is not None and top_mean - bottom_mean < SEPARATION_MARGIN:
        warnings.append({"kind": "no_separation", "text": (
            "The rubric cannot separate your best answers from your worst: "
            f"the {len(bottom)} you ranked lowest score {bottom_mean:.2f} on average, "
            f"the {len(top)} you ranked highest {top_mean:.2f} (a margin under {SEPARATION_MARGIN:.2f}).")})
    at_max = sum(1 for pk in ranked if scores[pk] >= MAX_SCORE)
    if at_max > n * CEILING_SHARE:
        warnings.append({"kind": "ceiling", "text": (
            f"Most answers get the maximum score ({at_max} of {n}): the rubric has no room left to reward a better answer.")})
    if passing_probes:
        listed = "; ".join(passing_probes[:3]) + ("…" if len(passing_probes) > 3 else "")
        warnings.append({"kind": "probe_passes", "text": (
            f"{len(passing_probes)} reward-hacking probe{'s pass' if len(passing_probes) > 1 else ' passes'} "
            f"this rubric version ({listed}): an answer that does not do the task is rewarded.")})
    culprits = low_ranked_criteria(top=top, bottom=bottom, verdicts=verdicts, criteria=criteria) if warnings else []
    return {"warnings": warnings, "culprits": culprits, "top_mean": top_mean, "bottom_mean": bottom_mean}


def low_ranked_criteria(
    *, top: list[int], bottom: list[int], verdicts: dict[tuple[int, int], bool], criteria: list[Criterion]
) -> list[dict]:
    """The positive criteria that reward the answers the expert ranked lowest: met by at least
    half of the bottom third, and at least as often there as in the top third."""
    found = []
    for criterion in criteria:
        if criterion.points <= 0:
            continue
        low = sum(1 for pk in bottom if verdicts.get((pk, criterion.pk)))
        high = sum(1 for pk in top if verdicts.get((pk, criterion.pk)))
        if low * 2 >= len(bottom) and low > 0 and low / len(bottom) >= high / len(top):
            found.append({"criterion": criterion, "low_met": low, "low": len(bottom), "high_met": high, "high": len(top)})
    return sorted(found, key=lambda row: (-row["low_met"] / row["low"], -row["criterion"].points, row["criterion"].position))
