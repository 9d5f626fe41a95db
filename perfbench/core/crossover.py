"""The crossover design behind AB-BA timing: which side runs first in each pair, and the period
effect.  Pure: numpy and scipy, no I/O.

A run of pairs is a 2x2 crossover trial.  Each pair times both sides once; the order of every
quad (two pairs) is ABBA or BAAB, drawn from the run's seed, so at every even stopping point as
many pairs ran the baseline first as the candidate, and nothing that recurs at a fixed point of
the schedule lines up with one side.  Whatever makes the first block of a pair slower than the
second (the scorer's work at the pair boundary, caches, a clock ramp) is the period effect p:
on the log ratio l = ln(t_base / t_cand), a baseline-first pair reads t + p and a
candidate-first pair t - p.  Half the difference of the two groups' medians estimates p and is
removed from every pair before the median is taken (period_shift: medians, so that a few blocks
a preemption stretched cannot move every pair); the report gives the means' estimate with
Welch's t for its CI and test (estimate).  Uncorrected, the
pairs form two clusters 2p apart, and their median sits between them wherever the last
unbalanced pair puts it: one pair without the effect moved an A/A speedup by p/2
(tests/unit/test_schedule.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

# The measurement protocol an s_ref is comparable within (bench_configs records it; `score` warns
# when an s_ref came from another).  Each version changed what a speedup reads; what each moved
# is in benchmarks/results/timing.md, "The protocol versions, measured".
# 1: pairs AB, BA, AB, ...; the plain median of the pairs' ratios.
# 2: orders drawn per quad; the scorer's work at the pair boundary; each process's period effect
#    removed from its pairs' ratios.
# 3: the workers' untimed work before each block costs alike on both sides (the child-process
#    tripwire's /proc scan cost more in the baseline's PID namespace than in the sandbox).
# 4: no timed pair runs in the workers that ran the gate and the baseline alone (their
#    histories differ).
# 5: each timed block's inputs start at an in-page offset drawn from its seed, not on a page
#    boundary (arena.in_page_start): one fixed alignment measures every kernel at one point of
#    4K aliasing with its heap temporaries.
# 6: the period effect removed is half the difference of the two orders' medians, not means
#    (period_shift): a few blocks a competing load stretched moved the means, and every pair
#    with them.
PROTOCOL_VERSION = 6


def draw_orders(seed: int, n_pairs: int) -> tuple[bool, ...]:
    """Whether the baseline runs first, per pair: each quad ABBA or BAAB, drawn from `seed`."""
    if n_pairs < 0:
        raise ValueError(f"n_pairs must be >= 0, got {n_pairs}")
    flips = np.random.default_rng((seed % (1 << 62), 0xABBA)).integers(0, 2, size=(n_pairs + 1) // 2)
    return tuple(bool(f) != bool(k) for f in flips for k in (0, 1))[:n_pairs]


def alternating_orders(n_pairs: int) -> tuple[bool, ...]:
    """The order before orders were drawn (results of schema 1 and 2): AB, BA, AB, ..."""
    return tuple(i % 2 == 0 for i in range(n_pairs))


@dataclass(frozen=True)
class PeriodEffect:
    """ln(first block / second block) over a run's pairs, with its CI; and the two groups' means
    of ln(t_base / t_cand) it comes from (the side-by-position check).  The speedup's correction
    uses the medians' estimate (period_shift); these are the means', for a test and a CI."""

    value: float              # log scale: > 0 means the first block of a pair is the slower one
    low: float
    high: float
    confidence: float
    p_value: float            # Welch's t test against no period effect
    baseline_first_mean: float    # mean ln(t_base / t_cand) of the baseline-first pairs
    candidate_first_mean: float   # ... of the candidate-first pairs
    n_baseline_first: int
    n_candidate_first: int

    @property
    def first_over_second(self) -> float:
        return math.exp(self.value)

    def significant(self, alpha: float = 0.01) -> bool:
        return self.p_value < alpha

    def to_dict(self) -> dict:
        return {"first_over_second": self.first_over_second, "log_value": self.value,
                "ci": [math.exp(self.low), math.exp(self.high)], "confidence": self.confidence,
                "p_value": self.p_value, "significant": self.significant(),
                "baseline_first_mean_log_ratio": self.baseline_first_mean,
                "candidate_first_mean_log_ratio": self.candidate_first_mean,
                "n_baseline_first": self.n_baseline_first, "n_candidate_first": self.n_candidate_first}


def _groups(lr: np.ndarray, baseline_first: Sequence[bool]) -> tuple[np.ndarray, np.ndarray] | None:
    first = np.asarray(baseline_first, dtype=bool)
    if first.shape != lr.shape:
        raise ValueError(f"{first.size} pair orders for {lr.size} pairs")
    ab, ba = lr[first], lr[~first]
    return (ab, ba) if ab.size >= 2 and ba.size >= 2 else None


def period_shift(ab: np.ndarray, ba: np.ndarray) -> np.ndarray | float:
    """The period effect the correction removes: half the difference of the medians of the
    baseline-first pairs' log ratios `ab` and the candidate-first pairs' `ba` (along the last
    axis, so a bootstrap's resamples go in one call).  A constant period effect of any size moves
    both medians alike, so it cancels exactly; unlike the means, the medians ignore the few blocks
    that a preemption or a competing process stretched (breakdown point 50% in each group)."""
    return period_shift_of_medians(np.median(ab, axis=-1), np.median(ba, axis=-1))


def period_shift_of_medians(ab_median: np.ndarray | float, ba_median: np.ndarray | float) -> np.ndarray | float:
    """`period_shift` from the two groups' medians (stats.cluster_bootstrap_ci has them already)."""
    return (ab_median - ba_median) / 2.0


def estimable(baseline_first: Sequence[bool]) -> bool:
    """Whether the orders allow a period effect: at least 2 pairs of each."""
    n_first = sum(bool(f) for f in baseline_first)
    return n_first >= 2 and len(baseline_first) - n_first >= 2


def estimate(lr: np.ndarray, baseline_first: Sequence[bool], confidence: float = 0.95) -> PeriodEffect | None:
    """The period effect of pairs with log ratios `lr`, as reported: the means' estimate with
    Welch's CI and test (period_shift, the medians', is what the correction removes; the two
    agree unless a few blocks ran far slower than the rest).  None with fewer than 2 pairs of
    an order."""
    groups = _groups(lr, baseline_first)
    if groups is None:
        return None
    ab, ba = groups
    value = (ab.mean() - ba.mean()) / 2.0
    va, vb = ab.var(ddof=1) / ab.size, ba.var(ddof=1) / ba.size
    se = math.sqrt(va + vb) / 2.0
    if se == 0.0:
        p, half = (1.0 if value == 0.0 else 0.0), 0.0
    else:
        from scipy import stats as sps   # (imported on first use: stats.preload)

        df = (va + vb) ** 2 / ((va ** 2 / (ab.size - 1) if va else 0.0) + (vb ** 2 / (ba.size - 1) if vb else 0.0))
        p = float(2.0 * sps.t.sf(abs(value) / se, df))
        half = float(sps.t.ppf(0.5 + confidence / 2.0, df)) * se
    return PeriodEffect(float(value), float(value - half), float(value + half), confidence, p,
                        float(ab.mean()), float(ba.mean()), int(ab.size), int(ba.size))


def corrected(lr: np.ndarray, baseline_first: Sequence[bool], clusters: Sequence[int] = ()) -> np.ndarray:
    """`lr` with the estimated period effect removed from each pair (unchanged where it cannot
    be estimated: no order recorded, or fewer than 2 pairs of an order).  With `clusters` (the
    worker process of each pair) each process is its own trial, with its own period effect: a
    score's processes differ in memory layout, and their effects were seen 13% apart."""
    labels = np.asarray(clusters)
    if len(baseline_first) and labels.size and np.unique(labels).size >= 2:
        first = np.asarray(baseline_first, dtype=bool)
        out = lr.copy()
        for c in np.unique(labels):
            out[labels == c] = corrected(lr[labels == c], first[labels == c])
        return out
    if len(baseline_first) == 0:
        return lr
    groups = _groups(lr, baseline_first)
    if groups is None:
        return lr
    p = period_shift(*groups)
    return lr - np.where(np.asarray(baseline_first, dtype=bool), p, -p)


def resampled_medians(lr: np.ndarray, baseline_first: Sequence[bool], rng: np.random.Generator,
                      n_resamples: int) -> np.ndarray:
    """Bootstrap medians of the period-corrected log ratios: the pairs of each order resampled
    among themselves (the design keeps the two orders balanced) and the period effect estimated
    afresh in every resample, so the CI carries the estimate's own uncertainty."""
    first = np.asarray(baseline_first, dtype=bool)
    ab, ba = lr[first], lr[~first]
    a = ab[rng.integers(0, ab.size, size=(n_resamples, ab.size))]
    b = ba[rng.integers(0, ba.size, size=(n_resamples, ba.size))]
    p = period_shift(a, b)
    return np.median(np.concatenate([a - p[:, None], b + p[:, None]], axis=1), axis=1)


def order_statistic_ci(lr: np.ndarray, confidence: float) -> tuple[float, float] | None:
    """The distribution-free CI of the median of `lr` (two order statistics; binomial ranks).

    Microseconds, so it can run after every pair as the sampler's stop check; the reported CI
    is still the bootstrap's, computed once the pairs are in.  None where n is too small for
    any pair of order statistics to reach `confidence`."""
    n = lr.size
    tail = (1.0 - confidence) / 2.0
    cdf, k = 0.0, 0
    while k < n:   # k = the largest count with P(Binomial(n, 1/2) < k) <= tail
        nxt = cdf + math.comb(n, k) / 2.0 ** n
        if nxt > tail:
            break
        cdf, k = nxt, k + 1
    if k == 0:
        return None
    s = np.sort(lr)
    return float(s[k - 1]), float(s[n - k])
