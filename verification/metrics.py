"""Metrics over graded rollouts, in plain Python numbers (no numpy needed to call them).

- pass_at_k: the unbiased estimator of Chen et al. (2021): with n samples of which c
  passed, 1 - C(n-c, k) / C(n, k), computed stably as 1 - prod(1 - k / i) for i in
  n-c+1 … n.
- pass_hat_k: the chance that k samples drawn without replacement ALL pass (pass^k).
- kendall_tau_b: rank agreement with ties (tau-b), between two equally long sequences.
- spearman_rho: Pearson correlation of average ranks (ties get their mean rank).
- confusion: judge vs expert verdicts → counts, precision, recall, F1.
- cohen_kappa: agreement between two raters beyond chance.
"""

import math
import warnings
from collections.abc import Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n or k < 1:
        raise ValueError("need 0 <= c <= n and k >= 1")
    if k > n:
        raise ValueError("k cannot exceed the number of samples n")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: C(c, k) / C(n, k), the chance that k distinct samples all pass."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError("need 0 <= c <= n and 1 <= k <= n")
    return math.comb(c, k) / math.comb(n, k)


def _check_pair(x: Sequence[float], y: Sequence[float]) -> int:
    if len(x) != len(y):
        raise ValueError("the two sequences must be equally long")
    return len(x)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b (ties allowed); NaN when either sequence is constant: no ranking to compare."""
    from scipy import stats  # here, not at the top: importing scipy.stats costs about 60 MB, and pack builds import this module

    if _check_pair(x, y) < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)  # answered with NaN, which callers read
        return float(stats.kendalltau(x, y, variant="b").statistic)


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho over average ranks; NaN when either sequence is constant."""
    from scipy import stats

    if _check_pair(x, y) < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(stats.spearmanr(x, y).statistic)


def confusion(judge: Sequence[bool], expert: Sequence[bool]) -> dict:
    """Judge verdicts against the expert's: a false positive is the judge saying 'met'
    where the expert says 'not met'."""
    _check_pair(judge, expert)
    tp = sum(1 for j, e in zip(judge, expert, strict=True) if j and e)
    fp = sum(1 for j, e in zip(judge, expert, strict=True) if j and not e)
    fn = sum(1 for j, e in zip(judge, expert, strict=True) if not j and e)
    tn = sum(1 for j, e in zip(judge, expert, strict=True) if not j and not e)
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    f1 = 2 * precision * recall / (precision + recall) if tp and (precision + recall) else (0.0 if tp + fp + fn else float("nan"))
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": precision, "recall": recall, "f1": f1}


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float:
    n = _check_pair(a, b)
    if not n:
        return float("nan")
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    return (observed - expected) / (1 - expected) if expected != 1 else float("nan")


def difficulty_band(pass1: float, pass_top: float) -> str:
    """too easy / learnable / too hard, from pass@1 and the largest-k pass@k."""
    if pass_top == 0:
        return "too hard"
    if pass1 >= 0.9:
        return "too easy"
    return "learnable"
