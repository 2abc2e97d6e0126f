"""The experts' own calls on criteria, across rubric versions, and how far experts agree with
each other.

An expert's call is kept on the criterion it was made on (ExpertVerdict: rollout, criterion,
expert), and a new rubric version has new criterion rows. A call carries over to a later
version for a criterion with the same text and points (verification.versions.criterion_key):
it is looked up here, not copied when the version is made, because

- the version is made in authoring, which sits below rollouts and may not write its tables;
- a new version stays editable until it grades something: a copy made when it was created
  would go stale with each edit, and a criterion whose text or points change must start
  empty — a lookup sees the criterion as it is now, so it does at once;
- nothing is duplicated, and the call stays where the expert made it: clearing or changing a
  call on the new version never rewrites what they said of the old one.

An expert's own call on the new version's criterion always wins over a carried one.
Rankings need no carrying: they belong to the batch (Ranking: batch, expert), whatever
rubric version grades it."""

import math
from collections import defaultdict
from itertools import combinations

from authoring.models import RubricVersion
from rollouts.models import ExpertVerdict, GradeStatus, Verdict
from verification import metrics
from verification.versions import criterion_key

# (rollout id, criterion id, expert id) → (met, the version number it was made on when carried over, else None)
Calls = dict[tuple[int, int, int], tuple[bool, int | None]]


def expert_calls(*, rubric_version: RubricVersion, rollout_ids: list[int] | None = None, expert_id: int | None = None) -> Calls:
    """The experts' calls on the criteria of this version: their own, and, where they have
    none, their call on the same criterion in the newest earlier version of the task that
    has one. Optionally only on these rollouts, or by one expert."""
    criteria = list(rubric_version.criteria.all())
    by_key: dict[tuple[str, int], list[int]] = defaultdict(list)
    for criterion in criteria:
        by_key[criterion_key(criterion)].append(criterion.pk)
    scope = {}
    if rollout_ids is not None:
        scope["rollout_id__in"] = rollout_ids
    if expert_id is not None:
        scope["expert_id"] = expert_id
    calls: Calls = {}
    if rubric_version.number > 1 and criteria:
        earlier = (ExpertVerdict.objects.filter(criterion__rubric_version__env_task_id=rubric_version.env_task_id,
                                                criterion__rubric_version__number__lt=rubric_version.number,
                                                criterion__text__in={c.text for c in criteria}, **scope)
                   .order_by("criterion__rubric_version__number", "id")
                   .values_list("rollout_id", "expert_id", "met", "criterion__text", "criterion__points",
                                "criterion__rubric_version__number"))
        for rollout_id, expert, met, text, points, number in earlier:  # oldest first: the newest call stays
            for criterion_id in by_key.get((text, points), []):
                calls[(rollout_id, criterion_id, expert)] = (met, number)
    own = ExpertVerdict.objects.filter(criterion__rubric_version=rubric_version, **scope).values_list(
        "rollout_id", "criterion_id", "expert_id", "met"
    )
    for rollout_id, criterion_id, expert, met in own:
        calls[(rollout_id, criterion_id, expert)] = (met, None)
    return calls


def calls_by_criterion_and_rollout(calls: Calls) -> dict[tuple[int, int], bool]:
    """(criterion, rollout) → an expert's call, as the judge-vs-expert table counts them
    (with several experts on one verdict, the last expert's call)."""
    return {(criterion_id, rollout_id): met for (rollout_id, criterion_id, _), (met, _) in sorted(calls.items())}


def _mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def _agreement(pairs: list[tuple[list[bool], list[bool], list[bool]]]) -> dict | None:
    """Over each pair of experts' shared labels (a, b, and the judge's on the same): Cohen's
    kappa and the F1 of one expert against the other (F1 is symmetric: swapping them swaps
    false positives and false negatives), each the mean over the pairs, and the judge's F1
    against those experts on the same labels. None without a shared label."""
    pairs = [p for p in pairs if p[0]]
    if not pairs:
        return None
    return {
        "pairs": len(pairs),
        "shared": sum(len(a) for a, _, _ in pairs),
        "kappa": _mean([metrics.cohen_kappa(a, b) for a, b, _ in pairs]),
        "f1": _mean([metrics.confusion(a, b)["f1"] for a, b, _ in pairs]),
        "judge_f1": _mean([metrics.confusion(j, e)["f1"] for a, b, j in pairs for e in (a, b)]),
    }


def expert_agreement(*, rubric_version: RubricVersion, judged: dict[tuple[int, int], bool], calls: Calls | None = None) -> dict:
    """Where two experts labelled the same verdicts of this version (their own or carried
    calls, on trajectories the judge graded: `judged` is (criterion, rollout) → the judge's
    met): per criterion and over all criteria, how far they agree — the ceiling beside the
    judge's F1, as HealthBench sets its grader's F1 beside the physicians' agreement. Only
    explicit calls count: an expert who marked nothing on a verdict may not have read it.
    {"criteria": {criterion id: figures}, "pooled": figures}; figures are None without two
    experts on one verdict."""
    calls = expert_calls(rubric_version=rubric_version) if calls is None else calls
    labels: dict[int, dict[int, dict[int, bool]]] = defaultdict(lambda: defaultdict(dict))  # criterion → expert → rollout → met
    for (rollout_id, criterion_id, expert), (met, _) in calls.items():
        if (criterion_id, rollout_id) in judged:
            labels[criterion_id][expert][rollout_id] = met
    per_criterion: dict[int, dict | None] = {}
    pooled: dict[tuple[int, int], tuple[list[bool], list[bool], list[bool]]] = defaultdict(lambda: ([], [], []))
    for criterion_id, by_expert in labels.items():
        pairs = []
        for first, second in combinations(sorted(by_expert), 2):
            shared = sorted(set(by_expert[first]) & set(by_expert[second]))
            a = [by_expert[first][r] for r in shared]
            b = [by_expert[second][r] for r in shared]
            j = [judged[(criterion_id, r)] for r in shared]
            pairs.append((a, b, j))
            for lists, values in zip(pooled[(first, second)], (a, b, j), strict=True):
                lists.extend(values)
        per_criterion[criterion_id] = _agreement(pairs)
    return {"criteria": per_criterion, "pooled": _agreement(list(pooled.values()))}


def figure(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.2f}"


def _formatted(figures: dict | None) -> dict | None:
    if figures is None:
        return None
    return {**figures, **{f"{k}_label": figure(figures[k]) for k in ("kappa", "f1", "judge_f1")}}


def expert_ceiling(*, rubric_version: RubricVersion) -> dict:
    """expert_agreement over the verdicts this version reached on trajectories it graded,
    with each figure also formatted (`kappa_label`…: "—" where undefined)."""
    judged = {(c, r): met for c, r, met in Verdict.objects.filter(
        grade__rubric_version=rubric_version, grade__status=GradeStatus.GRADED, grade__rollout__isnull=False, met__isnull=False,
    ).values_list("criterion_id", "grade__rollout_id", "met")}
    figures = expert_agreement(rubric_version=rubric_version, judged=judged)
    return {"criteria": {pk: _formatted(f) for pk, f in figures["criteria"].items()}, "pooled": _formatted(figures["pooled"])}
