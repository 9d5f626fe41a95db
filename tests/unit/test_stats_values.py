"""Statistics held to their exact values (core/stats.py, core/crossover.py): each estimate against an
independent computation (scipy's Welch and Wilcoxon, the Walsh averages, the binomial ranks), the
seeded CIs and orders bit for bit, every confidence, resample count, process and order carried
where it belongs.  Written against the mutants mutmut found alive (#63, benchmarks/mutation_score.py)."""
import math

import numpy as np
import pytest

from perfbench.core import stats

def test_a_geometric_mean_and_a_ratio_carry_each_sides_half_width():
    a = stats.Estimate(4.0, 2.0, 16.0, 0.95)      # ln half-widths: down ln 2, up ln 4
    b = stats.Estimate(2.0, 1.0, 8.0, 0.95)
    g = stats.geometric_mean([a, b])
    assert g.value == pytest.approx(math.sqrt(8.0))
    assert math.log(g.value / g.low) == pytest.approx(math.sqrt(2 * (0.5 * math.log(2)) ** 2))
    assert math.log(g.high / g.value) == pytest.approx(math.sqrt(2 * (0.5 * math.log(4)) ** 2))
    r = stats.ratio(a, b)   # a / b: a's low end with b's high end
    assert r.value == pytest.approx(2.0)
    assert math.log(r.value / r.low) == pytest.approx(math.hypot(math.log(2), math.log(4)))
    assert math.log(r.high / r.value) == pytest.approx(math.hypot(math.log(4), math.log(2)))
    one = stats.geometric_mean([a])
    assert (one.value, one.low, one.high) == pytest.approx((4.0, 2.0, 16.0)) and g.confidence == 0.95
    with pytest.raises(ValueError, match="one or more estimates at one confidence"):
        stats.geometric_mean([])
    with pytest.raises(ValueError, match="one or more estimates at one confidence"):
        stats.geometric_mean([a, stats.Estimate(2.0, 1.0, 8.0, 0.9)])


def test_an_estimate_is_validated_and_knows_its_half_width():
    assert stats.Estimate(2.0, 1.0, 4.0, 0.95).rel_half_width == pytest.approx(math.log(2))
    assert stats.Estimate(1.0, 0.0, 2.0, 0.95).rel_half_width == math.inf
    for bad, message in (((2.0, 1.0, 4.0, 1.0), "confidence must be in"), ((2.0, 1.0, 4.0, 0.0), "confidence"),
                         ((5.0, 1.0, 4.0, 0.95), "outside its interval"), ((0.5, 1.0, 4.0, 0.95), "outside")):
        with pytest.raises(ValueError, match=message):
            stats.Estimate(*bad)


def test_stability_reads_its_spread_and_says_it():
    s = stats.Stability((2.0, 2.2, 2.1), ((1.9, 2.1), (2.0, 2.4), (2.0, 2.2)))
    assert s.spread == pytest.approx(1.1) and s.within_width == pytest.approx(2.1 / 1.9)
    assert s.to_dict() == {"process_speedups": [2.0, 2.2, 2.1], "process_cis": [[1.9, 2.1], [2.0, 2.4], [2.0, 2.2]],
                           "spread": s.spread, "within_width": s.within_width, "unstable": False,
                           "within_sd": s.within_sd, "between_sd": s.between_sd}
    assert stats.Stability((2.0, 2.3), ((1.9, 2.1), (2.2, 2.4))).unstable


def test_stability_splits_the_spread_into_the_pairs_noise_and_the_processes_own_effect():
    """#59: within_sd from each process's own CI, between_sd what is left of the medians' spread."""
    z = 1.959963984540054
    narrow = [(math.exp(-0.01 * z), math.exp(0.01 * z))] * 4   # each median known to 1% (SD, ln)
    # medians 5% apart (SD 4.6% in ln): nearly all of it the processes' own
    apart = stats.Stability(tuple(math.exp(x) for x in (-0.05, 0.0, 0.05, 0.0)), tuple(narrow))
    assert apart.within_sd == pytest.approx(0.01)
    assert apart.between_sd == pytest.approx(math.sqrt(0.005 / 3 - 0.0001))
    # medians within what their pairs' noise gives: no process effect left
    close = stats.Stability(tuple(math.exp(x) for x in (-0.005, 0.0, 0.005, 0.0)), tuple(narrow))
    assert close.between_sd == 0.0
    # a summary of several processes reads them off its own pairs, at its confidence
    rng = np.random.default_rng(3)
    base = np.exp(rng.normal(0.0, 0.02, 60))
    cand = np.concatenate([np.full(20, 1.0), np.full(20, 1.1), np.full(20, 0.9)])
    summary = stats.summarize(base, cand, seed=1, processes=[0] * 20 + [1] * 20 + [2] * 20, confidence=0.9)
    st = summary.stability
    assert st.confidence == 0.9 and 0.002 < st.within_sd < 0.02 and 0.07 < st.between_sd < 0.12


def test_a_summary_is_significant_below_alpha_only():
    s = stats.summarize([2.0, 2.1, 1.9, 2.05, 1.95, 2.0, 2.02, 1.98, 2.01, 1.99], [1.0] * 10, seed=1)
    assert s.p_value == pytest.approx(0.001953125)   # the exact Wilcoxon floor for 10 pairs
    assert s.significant() and s.significant(0.002) and not s.significant(0.001953125) and not s.significant(0.001)


def test_the_pair_bootstrap_resamples_every_pair_of_each_order():
    """Two pairs of each order, one of each far from the other: every pair can be drawn, so the
    CI spans both (a draw that never picked the first pair of an order collapsed it)."""
    orders = [True, True, False, False]
    lr = np.array([0.0, 0.4, 0.0, 0.4])   # no period effect; half the pairs 1.0x, half 1.49x
    cand = np.full(4, 1000.0)
    lo, hi = stats.bootstrap_ci(cand * np.exp(lr), cand, seed=2, baseline_first=orders, n_resamples=4000)
    assert lo == pytest.approx(1.0) and hi == pytest.approx(math.exp(0.4))
    lo, hi = stats.bootstrap_ci(cand * np.exp(lr[::-1]), cand, seed=2, baseline_first=orders, n_resamples=4000)
    assert lo == pytest.approx(1.0) and hi == pytest.approx(math.exp(0.4))


def _two_processes_two_periods(n=16):
    """Two processes whose period effects differ (+8% and -8%): every statistic that removes the
    period effect per process reads them differently from one that pools them or ignores it."""
    rng = np.random.default_rng(11)
    orders = np.array([k % 4 in (0, 3) for k in range(n)] * 2)
    labels = np.array([0] * n + [1] * n)
    period = np.where(labels == 0, 0.08, -0.08)
    lr = 0.01 + np.where(orders, period, -period) + rng.normal(0, 0.02, 2 * n) + 0.03 * labels
    cand = 1000.0 * np.exp(rng.normal(0, 0.01, 2 * n))
    return cand * np.exp(lr), cand, labels, orders


def test_summarize_carries_each_pairs_process_and_order_into_every_statistic():
    base, cand, labels, orders = _two_processes_two_periods()
    s = stats.summarize(base, cand, seed=4, processes=labels, baseline_first=orders, n_resamples=500)
    o, lab = list(orders), list(labels)
    assert s.speedup.value == stats.median_speedup(base, cand, o, lab) != stats.median_speedup(base, cand, o)
    assert s.hodges_lehmann == stats.hodges_lehmann(base, cand, o, lab) != stats.hodges_lehmann(base, cand, o)
    assert s.p_value == stats.wilcoxon_p(base, cand, o, lab) != stats.wilcoxon_p(base, cand, o)
    assert s.outliers == stats.mad_outliers(stats._corrected(base, cand, o, lab))
    groups = [(base[labels == p], cand[labels == p], orders[labels == p]) for p in (0, 1)]
    assert s.stability.process_speedups == tuple(stats.median_speedup(b, c, f) for b, c, f in groups)
    assert s.stability.process_speedups != tuple(stats.median_speedup(b, c) for b, c, _ in groups)
    assert s.stability.process_cis == tuple(stats.bootstrap_ci(b, c, seed=4, baseline_first=f, n_resamples=500)
                                            for b, c, f in groups)
    b_lo, b_hi = stats.cluster_bootstrap_ci(base, cand, labels, seed=4, baseline_first=o, n_resamples=500)
    t_lo, t_hi = stats.process_t_interval(s.stability.process_speedups)
    assert (s.speedup.low, s.speedup.high) == (min(b_lo, t_lo), max(b_hi, t_hi))
    assert (b_lo, b_hi) != stats.cluster_bootstrap_ci(base, cand, labels, seed=4, n_resamples=500)
    assert s.period == stats.period_effect(base, cand, o) and s.period.confidence == 0.95


def test_summarize_with_one_process_gives_the_pair_bootstrap_at_the_asked_confidence():
    base, cand, _, orders = _two_processes_two_periods()
    b, c, f = base[:16], cand[:16], list(orders[:16])
    s = stats.summarize(b, c, seed=4, confidence=0.8, baseline_first=f, n_resamples=500)
    assert (s.speedup.low, s.speedup.high) == stats.bootstrap_ci(b, c, seed=4, confidence=0.8, baseline_first=f,
                                                                 n_resamples=500)
    assert s.period.confidence == 0.8 and s.speedup.confidence == 0.8


def test_the_bootstraps_default_to_2000_resamples():
    """(A CI over 40 spread pairs moves with the number of resamples: 2001 gives another one.)"""
    rng = np.random.default_rng(3)
    base, cand = 1000.0 * np.exp(rng.normal(0.7, 0.1, 40)), np.full(40, 1000.0)
    labels, orders = [0] * 20 + [1] * 20, [k % 4 in (0, 3) for k in range(40)]
    assert stats.bootstrap_ci(base, cand, seed=1) == stats.bootstrap_ci(base, cand, seed=1, n_resamples=2000) \
        != stats.bootstrap_ci(base, cand, seed=1, n_resamples=2001)
    assert stats.cluster_bootstrap_ci(base, cand, labels, seed=1, baseline_first=orders) == \
        stats.cluster_bootstrap_ci(base, cand, labels, seed=1, baseline_first=orders, n_resamples=2000) != \
        stats.cluster_bootstrap_ci(base, cand, labels, seed=1, baseline_first=orders, n_resamples=2001)
    assert stats.summarize(base, cand, seed=1) == stats.summarize(base, cand, seed=1, n_resamples=2000) != \
        stats.summarize(base, cand, seed=1, n_resamples=2001)


def test_the_period_effects_test_is_welchs():
    from scipy import stats as sps

    from perfbench.core.crossover import estimate

    rng = np.random.default_rng(5)
    first = np.array([True] * 7 + [False] * 11)
    lr = np.where(first, 0.05, -0.05) + np.concatenate([rng.normal(0, 0.02, 7), rng.normal(0, 0.05, 11)])
    p = estimate(lr, first, confidence=0.9)
    welch = sps.ttest_ind(lr[first], lr[~first], equal_var=False)
    assert p.p_value == pytest.approx(welch.pvalue, rel=1e-9)
    lo, hi = welch.confidence_interval(0.9)
    assert (p.low, p.high) == (pytest.approx(lo / 2, rel=1e-9), pytest.approx(hi / 2, rel=1e-9))
    assert estimate(lr, first).confidence == 0.95


def test_a_summarys_significance_defaults_to_one_percent():
    s = stats.PairedSummary(10, stats.Estimate(2.0, 1.5, 2.5, 0.95), 2.0, 0.015, ())
    assert not s.significant() and s.significant(0.02)
    assert stats.PairedSummary(10, stats.Estimate(2.0, 1.5, 2.5, 0.95), 2.0, 0.009, ()).significant()


def test_the_bootstrap_cis_are_pinned_for_a_seed():
    """Bit for bit for a seed (a recorded verdict recomputes to itself): the pair bootstrap with and
    without orders, the cluster bootstrap with and without orders."""
    rng = np.random.default_rng(21)
    lr = rng.normal(0.5, 0.1, 24)
    orders = [k % 4 in (0, 3) for k in range(24)]
    labels = [0] * 8 + [1] * 8 + [2] * 8
    cand = np.full(24, 1000.0)
    base = cand * np.exp(lr + np.where(orders, 0.05, -0.05))
    assert stats.bootstrap_ci(base, cand, seed=7, baseline_first=orders, n_resamples=500) == \
        pytest.approx((1.5801529858109236, 1.7889452488402535), rel=1e-12)
    assert stats.bootstrap_ci(base, cand, seed=7, n_resamples=500) == \
        pytest.approx((1.5553776040546843, 1.814171390139146), rel=1e-12)
    assert stats.cluster_bootstrap_ci(base, cand, labels, seed=7, baseline_first=orders, n_resamples=500) == \
        pytest.approx((1.569743250092981, 1.7826772975497607), rel=1e-12)
    assert stats.cluster_bootstrap_ci(base, cand, labels, seed=7, n_resamples=500) == \
        pytest.approx((1.5425959044212576, 1.8281999315328872), rel=1e-12)
    lab, o = labels, list(orders)
    from perfbench.core import crossover
    assert np.array_equal(stats._corrected(base, cand, o, lab), crossover.corrected(stats.log_ratios(base, cand), o, lab))


def test_a_degenerate_bootstrap_is_the_value_itself():
    assert stats.bootstrap_ci([2.0], [1.0], seed=1) == (2.0, 2.0)
    assert stats.bootstrap_ci([2.0, 2.0, 2.0], [1.0, 1.0, 1.0], seed=1) == pytest.approx((2.0, 2.0))
    lo, hi = stats.bootstrap_ci([2.0, 3.0], [1.0, 1.0], seed=1)
    assert 2.0 <= lo < hi <= 3.0 + 1e-12
    lo, hi = stats.bootstrap_ci([2.0, 2.0, 3.0], [1.0, 1.0, 1.0], seed=1)
    assert lo < hi


@pytest.mark.parametrize("base,cand,message", [
    ([1.0, 2.0], [1.0], r"^paired samples need equal 1-D lengths, got \(2,\) and \(1,\)$"), ([], [], "^no samples$"),
    ([1.0, float("nan")], [1.0, 1.0], "^times must be finite$"), ([1.0, 1.0], [1.0, float("inf")], "^times must be finite$"),
    ([0.0], [1.0], "^times must be positive$"), ([1.0], [0.0], "^times must be positive$"),
])
def test_bad_samples_say_what_is_wrong(base, cand, message):
    with pytest.raises(ValueError, match=message):
        stats.log_ratios(base, cand)
    assert stats.log_ratios([2, 4], [1, 1]).dtype == np.float64   # integers are times too


def test_mad_outliers_against_the_scaled_median_absolute_deviation():
    # median 3, unscaled MAD 1: beyond 5 x 1.4826 = 7.41 from 3 (k = 5 by default)
    v = [2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 4.0, 4.0, 10.0, 10.5, -47.0]
    assert stats.mad_outliers(v) == (10, 11)
    assert stats.mad_outliers(v, k=4.0) == (9, 10, 11)
    assert stats.mad_outliers([3, 3, 3, 3, 8]) == (4,)   # no spread at all: whatever differs
    assert stats.mad_outliers([3, 3, 3, 3]) == ()


def test_hodges_lehmann_and_wilcoxon_on_the_corrected_pairs():
    from scipy import stats as sps

    from perfbench.core import crossover

    base, cand, labels, orders = _two_processes_two_periods()
    lr = crossover.corrected(stats.log_ratios(base, cand), list(orders), list(labels))
    walsh = [(lr[i] + lr[j]) / 2 for i in range(lr.size) for j in range(i, lr.size)]
    assert stats.hodges_lehmann(base, cand, list(orders), list(labels)) == pytest.approx(math.exp(np.median(walsh)))
    assert stats.wilcoxon_p(base, cand, list(orders), list(labels)) == pytest.approx(sps.wilcoxon(lr).pvalue)
    assert stats.wilcoxon_p([1.0, 1.0], [1.0, 1.0]) == 1.0


def test_the_quick_ci_is_the_order_statistics_of_the_corrected_pairs():
    from perfbench.core import crossover

    base, cand, _, orders = _two_processes_two_periods()
    lr = crossover.corrected(stats.log_ratios(base, cand), list(orders))
    q = stats.quick_ci(base, cand, list(orders))
    lo, hi = crossover.order_statistic_ci(lr, 0.95)
    assert (q.value, q.low, q.high, q.confidence) == (pytest.approx(math.exp(np.median(lr))), pytest.approx(math.exp(lo)),
                                                      pytest.approx(math.exp(hi)), 0.95)
    assert stats.quick_ci(base[:5], cand[:5]) is None


def test_a_samples_record_holds_float_tuples_whatever_it_was_given():
    from perfbench.core.results import PairedSamples

    s = PairedSamples([2, 3], [1, 1], 1, "max_pairs", processes=[0, 1], baseline_first=[True, False])
    assert (s.baseline_ns, s.candidate_ns, s.processes, s.baseline_first) == ((2.0, 3.0), (1.0, 1.0), (0, 1),
                                                                              (True, False))
    assert all(type(x) is float for x in s.baseline_ns + s.candidate_ns)
    for kwargs, message in ((dict(candidate_ns=[1.0]), "^baseline and candidate need the same number of pairs$"),
                            (dict(processes=[0]), r"^processes must hold one process number \(an int >= 0\) per pair$"),
                            (dict(baseline_first=[1, 0]), "^baseline_first must hold one bool per pair$")):
        with pytest.raises(ValueError, match=message):
            PairedSamples(**dict(dict(baseline_ns=[2.0, 3.0], candidate_ns=[1.0, 1.0], iters_per_block=1,
                                      stop_reason="x"), **kwargs))
    with pytest.raises(ValueError, match="^no pairs$"):
        PairedSamples((), (), 1, "x")
    with pytest.raises(ValueError, match="^a t interval over processes needs at least 2 processes$"):
        stats.process_t_interval([2.0])
    with pytest.raises(ValueError, match="^need one or more estimates at one confidence$"):
        stats.geometric_mean([])


def test_summarize_finds_outliers_and_its_ci_on_the_per_process_corrected_pairs():
    """Three processes holding the same pairs (their medians agree: the t interval is a point) with
    period effects of +-10%, one pair 0.3 off: found once each process's effect is removed, and the
    CI is the cluster bootstrap's with the orders."""
    from perfbench.core import crossover

    rng = np.random.default_rng(13)
    core_lr = 0.5 + rng.permutation(np.linspace(-0.01, 0.01, 16))
    orders = np.array([k % 4 in (0, 3) for k in range(16)] * 3)
    labels = np.repeat([0, 1, 2], 16)
    period = np.where(labels == 1, -0.1, 0.1)   # process 1's runs the other way: pooled, they do not cancel
    lr = np.tile(core_lr, 3) + np.where(orders, period, -period)
    lr[5] += 0.3
    cand = np.full(48, 1000.0)
    base = cand * np.exp(lr)
    o, lab = list(orders), list(labels)
    s = stats.summarize(base, cand, seed=2, processes=lab, baseline_first=o, n_resamples=400)
    assert s.outliers == stats.mad_outliers(crossover.corrected(lr, o, lab)) == (5,)
    assert stats.mad_outliers(crossover.corrected(lr, o)) != (5,)   # pooled, the outlier hides
    b = stats.cluster_bootstrap_ci(base, cand, lab, seed=2, baseline_first=o, n_resamples=400)
    t = stats.process_t_interval(s.stability.process_speedups)
    assert (s.speedup.low, s.speedup.high) == (min(b[0], t[0]), max(b[1], t[1]))
    unordered = stats.cluster_bootstrap_ci(base, cand, lab, seed=2, n_resamples=400)
    assert unordered[0] < min(b[0], t[0]) and unordered[1] > max(b[1], t[1])   # the orders narrow it


def test_the_unordered_bootstrap_at_the_asked_confidence():
    rng = np.random.default_rng(3)
    base, cand = 1000.0 * np.exp(rng.normal(0.7, 0.1, 40)), np.full(40, 1000.0)
    lo80, hi80 = stats.bootstrap_ci(base, cand, seed=1, confidence=0.8)
    lo95, hi95 = stats.bootstrap_ci(base, cand, seed=1)
    assert lo95 < lo80 < hi80 < hi95


@pytest.mark.parametrize("constant", ["ab", "ba"])
def test_welchs_test_with_one_order_constant(constant):
    from scipy import stats as sps

    from perfbench.core.crossover import estimate

    rng = np.random.default_rng(6)
    first = np.array([True] * 6 + [False] * 9)
    lr = np.where(first, 0.125, -0.125)   # (exact in binary: the constant group's variance is exactly 0)
    varied = rng.normal(0, 0.03, 15)
    lr = lr + np.where(first, 0.0, varied) if constant == "ab" else lr + np.where(first, varied, 0.0)
    p = estimate(lr, first, confidence=0.9)
    welch = sps.ttest_ind(lr[first], lr[~first], equal_var=False)
    assert p.p_value == pytest.approx(welch.pvalue, rel=1e-9)
    lo, hi = welch.confidence_interval(0.9)
    assert (p.low, p.high) == (pytest.approx(lo / 2, rel=1e-9), pytest.approx(hi / 2, rel=1e-9))
