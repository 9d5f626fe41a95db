"""The plugin's one decision, pure: a slowdown fails only when significant AND beyond the threshold."""
import numpy as np
import pytest

from perfbench.pytest_plugin.judge import UNPAIRED_WIDENING, judge, unpaired_speedup


@pytest.mark.parametrize("speedup,ci,regression", [
    (0.50, (0.48, 0.52), True),     # 100% slower, CI below 1
    (0.97, (0.96, 0.98), False),    # significant, but only 3% slower: within 5%
    (0.90, (0.80, 1.01), False),    # 11% slower, but the CI reaches 1: not significant
    (1.20, (1.10, 1.30), False),    # faster
])
def test_regression_needs_significance_and_size(speedup, ci, regression):
    j = judge(speedup, ci, threshold=0.05, paired=True)
    assert j.regression is regression and j.threshold == 0.05


def test_unpaired_widens_the_threshold_and_says_so():
    paired = judge(0.88, (0.86, 0.90), threshold=0.05, paired=True)
    unpaired = judge(0.88, (0.86, 0.90), threshold=0.05, paired=False)
    assert paired.regression and not unpaired.regression
    assert unpaired.threshold == pytest.approx(0.05 * UNPAIRED_WIDENING)
    assert "unpaired (saved run)" in unpaired.describe() and "within the 15% threshold" in unpaired.describe()
    assert paired.describe() == ("13.6% slower (paired): speedup 0.880x, CI [0.860, 0.900] entirely below 1 "
                                 "and beyond the 5% threshold")


def test_unpaired_speedup_is_the_ratio_of_medians_with_a_seeded_ci():
    rng = np.random.default_rng(7)
    ref = 1000 * (1 + 0.02 * rng.standard_normal(40))
    cur = 2000 * (1 + 0.02 * rng.standard_normal(40))
    s, ci = unpaired_speedup(ref, cur, seed=1)
    assert s == pytest.approx(np.median(ref) / np.median(cur))
    assert ci[0] < s < ci[1] and 0.48 < ci[0] and ci[1] < 0.52
    assert unpaired_speedup(ref, cur, seed=1) == (s, ci)     # same seed, same CI
    with pytest.raises(ValueError, match="at least 2 positive samples"):
        unpaired_speedup([1.0], cur, seed=1)
