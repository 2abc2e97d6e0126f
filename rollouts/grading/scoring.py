"""Score = points of met criteria / sum of positive points, clipped to [0, 1] (negative
criteria subtract when met); per tag the same over that tag's criteria."""

from dataclasses import dataclass


@dataclass
class Scored:
    score: float
    met_points: int
    positive_points: int
    passed: bool
    per_tag: dict


def _ratio(met: int, positive: int) -> float:
    return max(0.0, min(1.0, met / positive)) if positive else 0.0


def score(verdicts: list[tuple[int, str, bool]], *, threshold: float, all_must_pass: bool) -> Scored:
    """`verdicts`: (points, tag, met) per criterion."""
    met_points = sum(points for points, _, met in verdicts if met)
    positive = sum(points for points, _, _ in verdicts if points > 0)
    value = _ratio(met_points, positive)
    if all_must_pass:
        passed = all(met for points, _, met in verdicts if points > 0) and not any(met for points, _, met in verdicts if points < 0)
    else:
        passed = value >= threshold
    per_tag = {}
    for tag in sorted({tag for _, tag, _ in verdicts}):
        subset = [(p, m) for p, t, m in verdicts if t == tag]
        tag_positive = sum(p for p, _ in subset if p > 0)
        tag_met = sum(p for p, m in subset if m)
        per_tag[tag] = {
            "met_points": tag_met,
            "positive_points": tag_positive,
            "score": _ratio(tag_met, tag_positive) if tag_positive else None,
        }
    return Scored(score=value, met_points=met_points, positive_points=positive, passed=passed, per_tag=per_tag)
