import itertools
import math
import random

import pytest
from scipy import stats

from verification.metrics import cohen_kappa, confusion, kendall_tau_b, pass_at_k, pass_hat_k, spearman_rho


def brute_pass_at_k(n: int, c: int, k: int) -> float:
    """Enumerate every k-subset of n samples (c of which pass): the share with a pass."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize(("n", "c", "k"), [(n, c, k) for n in (1, 2, 5, 8, 10) for c in range(n + 1) for k in (1, 2, 4, 8) if k <= n])
def test_pass_at_k_matches_brute_force(n, c, k):
    assert pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k), abs=1e-12)


def test_pass_at_k_edges_and_errors():
    assert pass_at_k(16, 0, 16) == 0.0 and pass_at_k(16, 16, 1) == 1.0 and pass_at_k(16, 1, 1) == pytest.approx(1 / 16)
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)
    with pytest.raises(ValueError):
        pass_at_k(4, 2, 5)


def test_pass_hat_k_matches_brute_force():
    for n, c, k in [(8, 4, 2), (8, 8, 8), (8, 7, 8), (10, 6, 3)]:
        samples = [True] * c + [False] * (n - c)
        subsets = list(itertools.combinations(range(n), k))
        assert pass_hat_k(n, c, k) == pytest.approx(sum(all(samples[i] for i in s) for s in subsets) / len(subsets))


@pytest.mark.parametrize("seed", range(20))
def test_tau_and_rho_match_scipy_with_ties(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 15)
    x = [rng.choice([0, 0.25, 0.5, 0.75, 1.0]) for _ in range(n)]
    y = [rng.randint(1, 5) for _ in range(n)]
    expected_tau = stats.kendalltau(x, y, variant="b").statistic
    expected_rho = stats.spearmanr(x, y).statistic
    tau, rho = kendall_tau_b(x, y), spearman_rho(x, y)
    assert (math.isnan(tau) and math.isnan(expected_tau)) or tau == pytest.approx(expected_tau)
    assert (math.isnan(rho) and math.isnan(expected_rho)) or rho == pytest.approx(expected_rho)


def test_perfect_and_reversed_orders():
    assert kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0 and spearman_rho([1, 2, 3], [3, 2, 1]) == -1.0


def test_confusion_counts_a_judge_saying_met_wrongly_as_a_false_positive():
    result = confusion(judge=[True, True, False, False, True], expert=[True, False, True, False, True])
    assert (result["tp"], result["fp"], result["fn"], result["tn"]) == (2, 1, 1, 1)
    assert result["precision"] == pytest.approx(2 / 3) and result["recall"] == pytest.approx(2 / 3) and result["f1"] == pytest.approx(2 / 3)


def test_cohen_kappa_against_sklearn_formula():
    a = [True, True, False, False, True, False]
    b = [True, False, False, False, True, True]
    observed = 4 / 6
    expected = (3 / 6) * (3 / 6) + (3 / 6) * (3 / 6)
    assert cohen_kappa(a, b) == pytest.approx((observed - expected) / (1 - expected))
