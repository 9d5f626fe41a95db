import numpy as np
import pytest

from perfbench.core import stats


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


def _two_processes(offset, n=20, noise=0.01, seed=3):
    """Pairs from two worker processes whose true speedups differ by exp(offset)."""
    b0, c0 = _pairs(n, 2.0, noise, seed)
    b1, c1 = _pairs(n, 2.0 * np.exp(offset), noise, seed + 1)
    return np.concatenate([b0, b1]), np.concatenate([c0, c1]), [0] * n + [1] * n


def test_cluster_bootstrap_covers_the_between_process_spread():
    base, cand, procs = _two_processes(offset=0.10)
    lo, hi = stats.cluster_bootstrap_ci(base, cand, procs, seed=1)
    # each process's pairs are 1% noisy; the processes sit 10% apart: both inside the CI
    assert lo < 2.0 * 1.01 and hi > 2.0 * np.exp(0.10) * 0.99
    assert stats.cluster_bootstrap_ci(base, cand, procs, seed=1) == (lo, hi)
    with pytest.raises(ValueError, match="cluster labels"):
        stats.cluster_bootstrap_ci(base, cand, procs[:-1], seed=1)


def _cluster_ci_one_resample_at_a_time(base, cand, clusters, seed, baseline_first, confidence=0.95, n_resamples=2000):
    """cluster_bootstrap_ci as it was before its resamples were taken side by side: the oracle."""
    from perfbench.core import crossover
    lr, labels = stats.log_ratios(base, cand), np.asarray(clusters)
    ordered = crossover.estimable(baseline_first)
    first = np.asarray(baseline_first, dtype=bool) if ordered else np.zeros(lr.shape, dtype=bool)
    groups = [(lr[labels == c], first[labels == c]) for c in np.unique(labels)]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(n_resamples, len(groups)))
    medians = np.empty(n_resamples)
    for b in range(n_resamples):
        drawn = [groups[i] for i in picks[b]]
        taken = [rng.integers(0, g.size, g.size) for g, _ in drawn]
        medians[b] = np.median(np.concatenate([crossover.corrected(g[t], f[t]) if ordered else g[t]
                                               for (g, f), t in zip(drawn, taken)]))
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(medians, [tail, 1.0 - tail])
    return float(np.exp(lo)), float(np.exp(hi))


@pytest.mark.parametrize("sizes", [(20, 20, 20), (20, 13, 7, 3), (5,), (2, 9)])
def test_cluster_bootstrap_gives_for_a_seed_the_ci_it_gave_one_resample_at_a_time(sizes):
    """The resamples are taken side by side now: the same draws, the same medians, bit for bit;
    with processes of unequal sizes, some too small for a period effect, and without orders."""
    rng = np.random.default_rng(sum(sizes))
    n = sum(sizes)
    base = rng.lognormal(0.0, 0.05, n) * 2.0
    cand = rng.lognormal(0.0, 0.05, n) * np.where(rng.random(n) < 0.1, 3.0, 1.0)   # (heavy tails)
    clusters = np.repeat(np.arange(len(sizes)), sizes)
    first = rng.random(n) < 0.5
    for orders in (tuple(first), ()):
        for seed in (1, 7):
            assert stats.cluster_bootstrap_ci(base, cand, clusters, seed=seed, baseline_first=orders,
                                              n_resamples=300) == \
                _cluster_ci_one_resample_at_a_time(base, cand, clusters, seed, orders, n_resamples=300)


def test_summarize_with_processes_reports_stability():
    base, cand, procs = _two_processes(offset=0.10)
    s = stats.summarize(base, cand, seed=1, processes=procs)
    assert s.stability is not None and s.stability.unstable
    assert s.stability.process_speedups[0] == pytest.approx(2.0, rel=0.02)
    assert s.stability.process_speedups[1] == pytest.approx(2.0 * np.exp(0.10), rel=0.02)
    assert s.stability.spread == pytest.approx(np.exp(0.10), rel=0.03)
    assert s.stability.within_width < 1.03      # each process alone: a CI a few percent wide
    assert s.speedup.high / s.speedup.low > s.stability.spread * 0.99
    assert s.stability.to_dict()["unstable"] is True
    # processes that agree: stable, and the cluster CI stays close to the pair bootstrap's
    base, cand, procs = _two_processes(offset=0.0, seed=11)
    s = stats.summarize(base, cand, seed=1, processes=procs)
    assert not s.stability.unstable
    assert s.speedup.value == pytest.approx(2.0, rel=0.01) and s.speedup.high / s.speedup.low < 1.03
    # one process (or no labels): the pair bootstrap, no stability record
    one = stats.summarize(base, cand, seed=1, processes=[0] * len(procs))
    assert one.stability is None and one == stats.summarize(base, cand, seed=1)
    with pytest.raises(ValueError, match="process labels"):
        stats.summarize(base, cand, seed=1, processes=[0, 1])


def test_process_t_interval():
    lo, hi = stats.process_t_interval([2.0, 2.0 * np.exp(0.02)])
    # two processes 2% apart: t(1 dof) = 12.71, sd/sqrt(2) = 0.01 -> +/- 12.7% around the mean
    assert np.log(hi / lo) / 2 == pytest.approx(12.706 * 0.01, rel=1e-3)
    assert np.sqrt(lo * hi) == pytest.approx(2.0 * np.exp(0.01))
    assert stats.process_t_interval([3.0, 3.0, 3.0]) == (pytest.approx(3.0), pytest.approx(3.0))
    with pytest.raises(ValueError, match="at least 2"):
        stats.process_t_interval([2.0])
    # summarize's CI with processes is at least as wide as the t interval
    base, cand, procs = _two_processes(offset=0.02)
    s = stats.summarize(base, cand, seed=1, processes=procs)
    t_lo, t_hi = stats.process_t_interval(s.stability.process_speedups)
    assert s.speedup.low <= t_lo and s.speedup.high >= t_hi


def test_the_pair_bootstrap_removes_the_period_effect_from_an_unbalanced_run():
    """16 baseline-first pairs against 14, a period effect of 8% and a true speedup of 1.5: each
    resample's period effect is taken out with its sign (a baseline-first pair reads t + p), so
    the CI sits on 1.5.  With the sign flipped the pairs spread 4p apart and the larger group
    drags the CI to 1.68-1.73 (#63); with balanced orders the flip barely shows."""
    rng = np.random.default_rng(5)
    orders = np.array([True] * 16 + [False] * 14)
    rng.shuffle(orders)
    lr = np.log(1.5) + np.where(orders, np.log(1.08), -np.log(1.08)) + rng.normal(0, 0.01, orders.size)
    cand = 1000.0 * np.exp(rng.normal(0, 0.02, orders.size))
    lo, hi = stats.bootstrap_ci(cand * np.exp(lr), cand, seed=1, baseline_first=orders)
    assert lo <= 1.5 <= hi and hi / lo < 1.02, (lo, hi)


def test_summarize_gives_the_confidence_it_is_asked_for_with_processes_too():
    """A non-default confidence reaches both parts of the CI over processes (the cluster bootstrap
    and the t interval): 80% is narrower than 95%, 99% wider, and each is recorded."""
    base, cand, procs = _two_processes(offset=0.03)
    widths = {}
    for confidence in (0.80, 0.95, 0.99):
        s = stats.summarize(base, cand, seed=1, processes=procs, confidence=confidence)
        t_lo, t_hi = stats.process_t_interval(s.stability.process_speedups, confidence)
        assert s.speedup.confidence == confidence
        assert (s.speedup.low, s.speedup.high) == (pytest.approx(t_lo), pytest.approx(t_hi))   # t is the wider here
        widths[confidence] = s.speedup.high / s.speedup.low
    assert widths[0.80] < widths[0.95] < widths[0.99]


def test_importing_perfbench_or_a_worker_does_not_import_scipy():
    """Every worker interpreter imports perfbench; scipy.stats would add ~1.8 s to each start."""
    import subprocess
    import sys
    code = ("import sys, perfbench, perfbench.isolation.processes.worker, perfbench.pipeline.score; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
