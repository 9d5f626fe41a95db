import numpy as np
import pytest

from perfbench import stats


def _pairs(n, ratio, noise, seed):
    rng = np.random.default_rng(seed)
    base = 1e6 * np.exp(rng.normal(0, noise, n))
    cand = base / ratio * np.exp(rng.normal(0, noise, n))
    return base, cand


def test_median_speedup_is_median_of_ratios():
    base = [10.0, 20.0, 30.0]
    cand = [5.0, 20.0, 10.0]   # ratios 2, 1, 3
    assert stats.median_speedup(base, cand) == pytest.approx(2.0)
    # even count: geometric mean of the middle two ratios, so s(A,B) == 1/s(B,A)
    b, c = [4.0, 9.0, 1.0, 2.0], [1.0, 1.0, 1.0, 1.0]
    assert stats.median_speedup(b, c) == pytest.approx(np.sqrt(2 * 4))
    assert stats.median_speedup(b, c) * stats.median_speedup(c, b) == pytest.approx(1.0)


def test_bootstrap_ci_reproducible_by_seed():
    base, cand = _pairs(20, 1.1, 0.05, seed=0)
    a = stats.bootstrap_ci(base, cand, seed=42)
    b = stats.bootstrap_ci(base, cand, seed=42)
    assert a == b
    # the median's bootstrap distribution is discrete for small n; with many pairs the seed shows
    big_b, big_c = _pairs(301, 1.1, 0.05, seed=0)
    assert stats.bootstrap_ci(big_b, big_c, seed=42) != stats.bootstrap_ci(big_b, big_c, seed=43)
    lo, hi = a
    assert lo < stats.median_speedup(base, cand) < hi
    assert lo < 1.1 < hi


def test_wilcoxon_floor_and_detection():
    base, cand = _pairs(8, 1.10, 0.01, seed=1)
    assert stats.wilcoxon_p(base, cand) == pytest.approx(2 / 2 ** 8)  # all pairs agree: exact floor
    base, cand = _pairs(5, 1.10, 0.01, seed=1)
    assert stats.wilcoxon_p(base, cand) == pytest.approx(0.0625)      # 5 pairs cannot reach 0.05
    assert stats.wilcoxon_p([1.0, 2.0], [1.0, 2.0]) == 1.0            # identical: no evidence


def test_aa_not_significant_at_nominal_rate():
    # 200 seeded A/A experiments: the false-positive rate at alpha=0.05 stays near 5%.
    rejections = sum(stats.wilcoxon_p(*_pairs(20, 1.0, 0.05, seed=s)) < 0.05 for s in range(200))
    assert rejections / 200 < 0.10


def test_hodges_lehmann_and_outliers():
    base, cand = _pairs(31, 1.25, 0.02, seed=2)
    assert stats.hodges_lehmann(base, cand) == pytest.approx(1.25, rel=0.02)
    values = [0.0, 0.01, -0.01, 0.02, -0.02, 0.0, 1.0]
    assert stats.mad_outliers(values) == (6,)
    assert stats.mad_outliers([0.0] * 5) == ()


@pytest.mark.parametrize("base,cand", [([1.0, 2.0], [1.0]), ([], []), ([1.0, -1.0], [1.0, 1.0]),
                                       ([1.0, float("nan")], [1.0, 1.0]), ([0.0], [1.0])])
def test_bad_samples_rejected(base, cand):
    with pytest.raises(ValueError):
        stats.log_ratios(base, cand)


def test_summarize_is_deterministic():
    base, cand = _pairs(12, 0.9, 0.03, seed=5)
    assert stats.summarize(base, cand, seed=9) == stats.summarize(base, cand, seed=9)
    est = stats.summarize(base, cand, seed=9).speedup
    assert est.low <= est.value <= est.high
    with pytest.raises(ValueError):
        stats.Estimate(1.0, 1.1, 1.2, 0.95)
