"""The schedule must not show in the number (#38).  A simulated host with a period effect: the
first block of a pair runs slower, or the block that follows scorer work does (statistics, the
stop check, progress, deferred checks).  Seeded: each case is the same every run."""
import math

import numpy as np
import pytest

from perfbench.core import stats
from perfbench.timing.sampler import SamplerConfig, sample_pairs

CFG = SamplerConfig(min_pairs=6, max_pairs=30, warmup_s=0.0, min_block_s=0.0, target_rel_ci=0.0, n_resamples=200)


class PeriodHost:
    """Both sides' blocks, in the order they run: the first block of each pair takes
    (1 + first) times as long, the block after scorer work (1 + after_work) times."""

    def __init__(self, seed: int, first: float = 0.0, after_work: float = 0.0, noise: float = 0.01,
                 stretched: float = 0.0):
        self.rng = np.random.default_rng(seed)
        self.first, self.after_work, self.noise = first, after_work, noise
        self.stretched = stretched   # the share of blocks a competing process stretches 3-30x
        self.blocks = 0
        self.worked = False

    def work(self, *args) -> None:
        self.worked = True

    def block(self, ns: float) -> float:
        f = (1 + self.first) if self.blocks % 2 == 0 else 1.0
        if self.worked:
            f, self.worked = f * (1 + self.after_work), False
        self.blocks += 1
        # (no draw without stretching: the other cases keep their random streams)
        if self.stretched and self.rng.random() < self.stretched:
            f *= math.exp(self.rng.uniform(math.log(3), math.log(30)))
        return ns * f * math.exp(self.noise * self.rng.standard_normal())


class HostSide:
    def __init__(self, host: PeriodHost, ns: float):
        self.host, self.ns = host, ns

    def run_block(self, iters: int, seed: int) -> float:
        return self.host.block(self.ns)


def _scorer_work_marks(monkeypatch, host: PeriodHost) -> None:
    """Every statistic the sampler computes between blocks is scorer work: the old sampler's
    bootstrap (summarize) and the new one's quick stop check (quick_ci)."""
    for name in ("summarize", "bootstrap_ci", "median_speedup", "quick_ci"):
        real = getattr(stats, name, None)
        if real is not None:
            monkeypatch.setattr(stats, name, lambda *a, _real=real, **k: host.work() or _real(*a, **k))


def _run(host: PeriodHost, true_speedup: float, seed: int, cfg: SamplerConfig = CFG):
    base, cand = HostSide(host, 1e6), HostSide(host, 1e6 / true_speedup)
    return sample_pairs(base, cand, cfg, seed=seed, clock=lambda: 0.0, progress=host.work)


@pytest.mark.parametrize("true_speedup", [1.0, 2.0])
def test_the_block_after_scorer_work_running_slower_does_not_move_the_speedup(monkeypatch, true_speedup):
    """Scorer work that always precedes the same side (the old sampler's bootstrap ran before
    every even, baseline-first pair: +1.3% here in A/A) must not show: mean ln s over 24 runs
    within 0.3% of the truth."""
    errors = []
    for seed in range(24):
        host = PeriodHost(seed, after_work=0.10)
        _scorer_work_marks(monkeypatch, host)
        s = _run(host, true_speedup, seed)
        errors.append(math.log(stats.median_speedup(s.baseline_ns, s.candidate_ns, s.baseline_first) / true_speedup))
        monkeypatch.undo()
    assert abs(np.mean(errors)) < 0.003 and max(map(abs, errors)) < 0.015, errors


@pytest.mark.parametrize("first", [0.05, 0.5])
def test_a_slow_first_block_does_not_move_the_speedup_at_any_size(first):
    errors = []
    for seed in range(24):
        s = _run(PeriodHost(seed, first=first), 1.5, seed)
        errors.append(math.log(stats.median_speedup(s.baseline_ns, s.candidate_ns, s.baseline_first) / 1.5))
    assert abs(np.mean(errors)) < 0.003 and max(map(abs, errors)) < 0.015, errors


@pytest.mark.parametrize("first", [0.0, 0.2])
def test_a_few_stretched_blocks_do_not_move_every_pair(first):
    """A competing process stretches 8% of the blocks 3-30x, at random (benchmarks/drift.py on
    a shared host).  The period estimate must not follow them: half the difference of the
    orders' means did (protocol 5) and moved every pair with it, here a median |ln s| of 9.3%
    and the worst 29.8% whatever the period effect; the medians' reads 0.33% and 0.81%."""
    errors = []
    for seed in range(24):
        s = _run(PeriodHost(seed, first=first, stretched=0.08), 1.5, seed,
                 SamplerConfig(min_pairs=20, max_pairs=20, warmup_s=0.0, min_block_s=0.0, target_rel_ci=0.0))
        errors.append(abs(math.log(stats.median_speedup(s.baseline_ns, s.candidate_ns, s.baseline_first) / 1.5)))
    assert np.median(errors) < 0.006 and max(errors) < 0.02, sorted(errors)


def test_every_stopping_point_is_balanced_and_the_order_is_drawn_from_the_seed():
    cfg = SamplerConfig(min_pairs=6, max_pairs=40, warmup_s=0.0, min_block_s=0.0, target_rel_ci=0.02)
    orders = []
    for seed in range(12):
        s = _run(PeriodHost(seed), 1.0, seed, cfg)
        first = s.baseline_first
        assert len(first) == s.n_pairs and s.n_pairs % 2 == 0
        assert all(first[i] != first[i + 1] for i in range(0, s.n_pairs, 2))   # each quad ABBA or BAAB
        orders.append(first[:6])
        assert _run(PeriodHost(seed), 1.0, seed, cfg).baseline_first == first   # the seed decides
    assert len(set(orders)) > 4   # not one fixed pattern


@pytest.mark.parametrize("first", [0.0, 0.08])
def test_the_period_effect_is_estimated(first):
    """The first block 8% slower: the estimate's CI holds ln(1.08) and says significant; none:
    its CI holds 0."""
    s = _run(PeriodHost(5, first=first), 1.0, 5, SamplerConfig(min_pairs=30, max_pairs=30, warmup_s=0.0,
                                                               min_block_s=0.0, target_rel_ci=0.0))
    p = stats.period_effect(s.baseline_ns, s.candidate_ns, s.baseline_first)
    assert p.low <= math.log(1 + first) <= p.high
    assert p.significant() == (first > 0)


def test_a_period_effect_larger_than_the_ci_warns_order_effect():
    from perfbench.core.results import ComparisonResult

    s = _run(PeriodHost(3, first=0.08, noise=0.002), 1.0, 3, SamplerConfig(min_pairs=30, max_pairs=30, warmup_s=0.0,
                                                                            min_block_s=0.0, target_rel_ci=0.0))
    r = ComparisonResult("a", "b", "cpu", "fake", 3, s, {"n_resamples": 200}, {})
    doc = r.to_dict()["summary"]["period_effect"]
    assert doc["first_over_second"] == pytest.approx(1.08, rel=0.01) and doc["significant"]
    assert [w.split(":")[0] for w in r.warnings] == ["order_effect"]
    quiet = ComparisonResult("a", "b", "cpu", "fake", 3, _run(PeriodHost(3), 1.0, 3), {"n_resamples": 200}, {})
    assert quiet.warnings == ()


def test_the_stop_check_runs_after_every_pair_and_no_bootstrap_between_blocks(monkeypatch):
    calls = []
    monkeypatch.setattr(stats, "summarize", lambda *a, **k: calls.append("summarize"))
    monkeypatch.setattr(stats, "bootstrap_ci", lambda *a, **k: calls.append("bootstrap"))
    seen = []
    s = sample_pairs(HostSide(PeriodHost(1), 1e6), HostSide(PeriodHost(2), 1e6), CFG, seed=1, clock=lambda: 0.0,
                     progress=lambda i, est: seen.append(i))
    assert calls == [] and seen == list(range(1, s.n_pairs + 1))


# -- #63: exact values a mutation run found unheld (benchmarks/mutation_score.py) --------------------
def test_alternating_orders_are_ab_ba_from_the_first_pair():
    from perfbench.core.crossover import alternating_orders

    assert alternating_orders(5) == (True, False, True, False, True) and alternating_orders(0) == ()


def test_the_period_effect_records_itself_exactly():
    from perfbench.core.crossover import estimate

    first = np.array([True, False] * 6)
    lr = np.log(2.0) + np.where(first, 0.1, -0.1) + np.array([0.01, -0.01, 0.0, 0.02, -0.02, 0.0] * 2)
    p = estimate(lr, first, confidence=0.9)
    assert (p.n_baseline_first, p.n_candidate_first, p.confidence) == (6, 6, 0.9)
    assert p.value == pytest.approx((lr[first].mean() - lr[~first].mean()) / 2)
    assert p.first_over_second == pytest.approx(math.exp(p.value))
    assert p.to_dict() == {"first_over_second": p.first_over_second, "log_value": p.value,
                           "ci": [math.exp(p.low), math.exp(p.high)], "confidence": 0.9, "p_value": p.p_value,
                           "significant": True, "baseline_first_mean_log_ratio": lr[first].mean(),
                           "candidate_first_mean_log_ratio": lr[~first].mean(), "n_baseline_first": 6,
                           "n_candidate_first": 6}
    assert p.low < p.value < p.high and p.significant(alpha=p.p_value * 1.01) and not p.significant(alpha=p.p_value)
    # no spread at all: a p of 0 for a non-zero effect, 1 for none
    flat = estimate(np.where(first, 0.125, -0.125), first)
    assert (flat.p_value, flat.low, flat.high) == (0.0, flat.value, flat.value)
    assert estimate(np.zeros(12), first).p_value == 1.0
    assert estimate(lr[:3], first[:3]) is None   # fewer than 2 pairs of an order


def test_the_orders_a_seed_draws_are_pinned():
    """Statistics are deterministic given a seed (a recorded verdict can be recomputed): the orders
    of seed 5, and of a seed that differs from it only above bit 62 (reduced mod 2**62)."""
    from perfbench.core.crossover import draw_orders

    expected = (False, True, False, True, True, False, False, True, True, False, False, True)
    assert draw_orders(5, 12) == expected and draw_orders(2 ** 62 + 5, 12) == expected
    assert draw_orders(5, 11) == expected[:11] and draw_orders(5, 0) == ()
    with pytest.raises(ValueError, match="^n_pairs must be >= 0, got -1$"):
        draw_orders(5, -1)


@pytest.mark.parametrize("first,second,ok", [(2, 2, True), (1, 3, False), (3, 1, False), (2, 1, False),
                                             (1, 2, False), (5, 9, True), (0, 0, False)])
def test_a_period_effect_needs_two_pairs_of_each_order(first, second, ok):
    from perfbench.core.crossover import estimable

    assert estimable([True] * first + [False] * second) is ok


def test_each_process_has_its_own_period_effect_from_two_processes_on():
    from perfbench.core.crossover import corrected

    orders = np.array([k % 4 in (0, 3) for k in range(8)] * 2)
    labels = np.array([0] * 8 + [1] * 8)
    lr = np.where(orders, np.where(labels == 0, 0.1, -0.1), np.where(labels == 0, -0.1, 0.1)) + 0.5
    assert np.allclose(corrected(lr, orders, labels), 0.5)                  # each process's own effect removed
    assert not np.allclose(corrected(lr, orders), 0.5)                      # pooled, the two cancel: left in
    assert np.array_equal(corrected(lr, orders, [0] * 16), corrected(lr, orders))   # one process: pooled
    with pytest.raises(ValueError, match="^15 pair orders for 16 pairs$"):
        corrected(lr, orders[:-1])
    assert np.array_equal(corrected(lr, ()), lr)


@pytest.mark.parametrize("n,confidence,expected", [
    (10, 0.95, (1.0, 8.0)),        # P(B(10) <= 1) = 11/1024 <= 2.5% < P(B <= 2): the 2nd and 9th
    (6, 0.95, (0.0, 5.0)),         # P(B(6) = 0) = 1/64: the extremes
    (5, 0.95, None),               # 1/32 > 2.5%: no pair of order statistics reaches 95%
    (6, 1 - 2 / 64, (0.0, 5.0)),   # a tail of exactly 1/64 is reached (<=)
    (20, 0.8, (6.0, 13.0)),
])
def test_the_order_statistic_ci_takes_the_binomial_ranks(n, confidence, expected):
    from scipy import stats as sps

    from perfbench.core.crossover import order_statistic_ci

    assert order_statistic_ci(np.arange(float(n))[::-1].copy(), confidence) == expected
    if expected is not None:   # the same ranks as scipy's binomial gives
        tail = (1 - confidence) / 2
        k = max(k for k in range(n + 1) if sps.binom.cdf(k - 1, n, 0.5) <= tail + 1e-15)
        assert expected == (float(k - 1), float(n - k))
