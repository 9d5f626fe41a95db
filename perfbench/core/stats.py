"""Statistics of paired timings.  Pure: numpy/scipy only, no I/O, no torch, no global RNG.

Every function takes the per-pair times of the baseline and the candidate (same length, same
order) and works on the per-pair log ratio ``ln(t_base / t_cand)``: a positive value means the
candidate was faster in that pair.  The speedup reported everywhere is the median of the
per-pair ratios, ``s = median_i(t_base_i / t_cand_i)``, as the protocol defines it.  Where the
order of each pair is known (`baseline_first`), the period effect is removed from each ratio
first (crossover.py): then neither the speedup nor its CI depends on the period effect's size.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import crossover
from .crossover import PeriodEffect


def _scipy_stats():
    """scipy.stats, imported on first use: it costs ~1.8 s of CPU here, and every process that
    imports perfbench (each worker interpreter, every CLI start) would otherwise pay it before
    doing anything (benchmarks/score_wall.py)."""
    from scipy import stats

    return stats


def preload() -> None:
    """Import scipy.stats now, while the caller only waits (for worker processes to start):
    otherwise the first CI of a score imports it (~0.7 s here) between two timed blocks."""
    _scipy_stats()


# 1.4826 * MAD estimates the standard deviation of normal data.
_MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval."""

    value: float
    low: float
    high: float
    confidence: float

    def __post_init__(self) -> None:
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")
        if not (self.low <= self.value <= self.high):
            raise ValueError(f"estimate {self.value} outside its interval [{self.low}, {self.high}]")

    @property
    def rel_half_width(self) -> float:
        """Half the CI width on the log scale, ~ the relative +/- of the estimate."""
        return 0.5 * math.log(self.high / self.low) if self.low > 0 else math.inf


@dataclass(frozen=True)
class Stability:
    """How much the speedup moved between the worker processes of one run.

    Each process's own pairs give a median speedup and a pair-bootstrap CI.  The run is
    `unstable` when the processes' medians spread (max / min) wider than a typical (the median)
    process's own CI: which process measured it decided the number more than its pairs did.
    The reported CI (`PairedSummary.speedup`) is the cluster bootstrap's either way."""

    process_speedups: tuple[float, ...]   # median speedup within each process, in process order
    process_cis: tuple[tuple[float, float], ...]
    confidence: float = 0.95              # of process_cis

    @property
    def spread(self) -> float:
        """max / min of the per-process medians."""
        return max(self.process_speedups) / min(self.process_speedups)

    @property
    def within_width(self) -> float:
        """high / low of the median process's own CI."""
        return float(np.median([hi / lo for lo, hi in self.process_cis]))

    @property
    def unstable(self) -> bool:
        return self.spread > self.within_width

    @property
    def within_sd(self) -> float:
        """The standard deviation a process's median speedup (ln) has from its own pairs' noise:
        each process's pair-bootstrap CI read as a normal one (half its log width over z), the
        root mean square over the processes."""
        z = statistics.NormalDist().inv_cdf(0.5 + self.confidence / 2)
        return math.sqrt(statistics.fmean((math.log(hi / lo) / (2 * z)) ** 2 for lo, hi in self.process_cis))

    @property
    def between_sd(self) -> float:
        """The standard deviation of the processes' own effect (ln): the variance of their median
        speedups less what their pairs' noise explains (`within_sd`), 0 where it explains all
        of it.  What is left is drawn per process: memory layout, allocator and page placement
        (#59).  Of a handful of processes, a rough figure: it says which part dominates."""
        logs = [math.log(x) for x in self.process_speedups]
        return math.sqrt(max(0.0, statistics.variance(logs) - self.within_sd ** 2))

    def to_dict(self) -> dict:
        return {"process_speedups": list(self.process_speedups), "process_cis": [list(c) for c in self.process_cis],
                "spread": self.spread, "within_width": self.within_width, "unstable": self.unstable,
                "within_sd": self.within_sd, "between_sd": self.between_sd}


@dataclass(frozen=True)
class PairedSummary:
    """Everything derived from one set of paired samples."""

    n_pairs: int
    speedup: Estimate          # median of per-pair ratios; CI: pair bootstrap, or with >= 2 processes
                               # the wider of the cluster bootstrap and the t interval over processes
    hodges_lehmann: float      # HL estimate of the ratio (exp of HL location of the log ratios)
    p_value: float             # Wilcoxon signed-rank, two-sided, on the log ratios
    outliers: tuple[int, ...]  # pair indices flagged by the MAD rule
    stability: Stability | None = None   # with pairs from >= 2 worker processes
    period: PeriodEffect | None = None   # with the pairs' orders: first block vs second

    def significant(self, alpha: float = 0.01) -> bool:
        return self.p_value < alpha


def log_ratios(base: Sequence[float], cand: Sequence[float]) -> np.ndarray:
    """``ln(t_base_i / t_cand_i)`` for each pair; validates the inputs."""
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    if b.shape != c.shape or b.ndim != 1:
        raise ValueError(f"paired samples need equal 1-D lengths, got {b.shape} and {c.shape}")
    if b.size == 0:
        raise ValueError("no samples")
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(c))):
        raise ValueError("times must be finite")
    if np.any(b <= 0) or np.any(c <= 0):
        raise ValueError("times must be positive")
    return np.log(b) - np.log(c)


def median_speedup(base: Sequence[float], cand: Sequence[float], baseline_first: Sequence[bool] = (),
                   processes: Sequence[int] = ()) -> float:
    """``median_i(t_base_i / t_cand_i)``, each ratio corrected for the period effect (of its
    worker process, given `processes`) where `baseline_first` gives the pairs' orders.

    Computed as exp(median(log ratio)); for an odd count this is exactly the median ratio, for
    an even count it is the geometric mean of the two middle ratios, which keeps s(A,B) ==
    1/s(B,A) exactly.
    """
    return float(np.exp(np.median(_corrected(base, cand, baseline_first, processes))))


def _corrected(base: Sequence[float], cand: Sequence[float], baseline_first: Sequence[bool],
               processes: Sequence[int] = ()) -> np.ndarray:
    return crossover.corrected(log_ratios(base, cand), baseline_first, processes)


def quick_ci(base: Sequence[float], cand: Sequence[float], baseline_first: Sequence[bool] = (),
             confidence: float = 0.95) -> Estimate | None:
    """The speedup with a distribution-free CI (crossover.order_statistic_ci): cheap enough for
    the sampler to look at after every pair.  None while too few pairs for one."""
    lr = _corrected(base, cand, baseline_first)
    ci = crossover.order_statistic_ci(lr, confidence)
    if ci is None:
        return None
    return _estimate(float(np.exp(np.median(lr))), math.exp(ci[0]), math.exp(ci[1]), confidence)


def period_effect(base: Sequence[float], cand: Sequence[float], baseline_first: Sequence[bool],
                  confidence: float = 0.95) -> PeriodEffect | None:
    """First block of a pair vs second (crossover.estimate), or None with too few of an order."""
    return crossover.estimate(log_ratios(base, cand), baseline_first, confidence)


def bootstrap_ci(base: Sequence[float], cand: Sequence[float], *, seed: int, confidence: float = 0.95,
                 n_resamples: int = 2000, baseline_first: Sequence[bool] = ()) -> tuple[float, float]:
    """Percentile bootstrap CI of the median speedup, resampling whole pairs.

    Deterministic given `seed`.  Percentile (not BCa) because the median's bootstrap
    distribution is discrete for small n and BCa's acceleration estimate is unstable there.
    """
    lr = _corrected(base, cand, baseline_first)
    if lr.size == 1 or np.all(lr == lr[0]):
        v = float(np.exp(lr[0] if lr.size == 1 else np.median(lr)))
        return v, v
    if crossover.estimable(baseline_first):
        medians = crossover.resampled_medians(log_ratios(base, cand), baseline_first, np.random.default_rng(seed),
                                              n_resamples)
        tail = (1.0 - confidence) / 2.0
        lo, hi = np.quantile(medians, [tail, 1.0 - tail])
        return float(np.exp(lo)), float(np.exp(hi))
    res = _scipy_stats().bootstrap((lr,), np.median, confidence_level=confidence, n_resamples=n_resamples,
                         method="percentile", vectorized=True, axis=-1,
                         random_state=np.random.default_rng(seed))
    lo, hi = res.confidence_interval
    return float(np.exp(lo)), float(np.exp(hi))


def cluster_bootstrap_ci(base: Sequence[float], cand: Sequence[float], clusters: Sequence[int], *, seed: int,
                         confidence: float = 0.95, n_resamples: int = 2000,
                         baseline_first: Sequence[bool] = ()) -> tuple[float, float]:
    """Hierarchical bootstrap CI of the median speedup: resample the clusters (worker processes)
    with replacement, then the pairs within each drawn cluster, and take the median of all.

    The pair bootstrap treats every pair as independent; pairs measured in one process share its
    allocator state, memory layout and thread pool, so they are not, and its CI is too narrow
    for a re-run.  Resampling processes puts the between-process variance into the interval."""
    lr = log_ratios(base, cand)
    labels = np.asarray(clusters)
    if labels.shape != lr.shape:
        raise ValueError(f"{labels.size} cluster labels for {lr.size} pairs")
    ordered = crossover.estimable(baseline_first)
    first = np.asarray(baseline_first, dtype=bool) if ordered else np.zeros(lr.shape, dtype=bool)
    groups = [(lr[labels == c], first[labels == c]) for c in np.unique(labels)]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(n_resamples, len(groups)))
    # Resample b's drawn processes side by side, each padded with NaN to the largest; the draws
    # are made in the order a loop over the resamples makes them, so a seed gives the CI it gave
    # when every resample was taken in turn (that loop: 0.4 s for 3 x 20 pairs, 64 ms now).
    values = np.full((n_resamples, len(groups), max(g.size for g, _ in groups)), np.nan)
    firsts = np.zeros(values.shape, dtype=bool)
    for b, drawn in enumerate(picks):
        for k, i in enumerate(drawn):
            g, f = groups[i]
            t = rng.integers(0, g.size, g.size)
            values[b, k, :g.size], firsts[b, k, :g.size] = g[t], f[t]
    if ordered:   # each drawn process's period effect estimated afresh (crossover.corrected)
        ab, ab_n = _padded_medians(np.where(firsts, values, np.nan))
        ba, ba_n = _padded_medians(np.where(firsts, np.nan, values))
        shift = np.where((ab_n >= 2) & (ba_n >= 2), crossover.period_shift_of_medians(ab, ba), 0.0)[..., None]
        values = values - np.where(firsts, shift, -shift)
    medians, _ = _padded_medians(values.reshape(n_resamples, -1))
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(medians, [tail, 1.0 - tail])
    return float(np.exp(lo)), float(np.exp(hi))


def _padded_medians(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The median of each row (last axis) of `x` over its values that are not NaN, as np.median
    computes it from them, and how many there were (a row of none gives NaN).  np.nanmedian
    gives the same values, ~10x slower on a bootstrap's (2000, 3, 20) (masked arrays), and warns
    on a process with no pairs of one order."""
    n = np.count_nonzero(~np.isnan(x), axis=-1)
    ranked = np.sort(x, axis=-1)   # (NaN last)
    lo = np.take_along_axis(ranked, np.maximum((n - 1) // 2, 0)[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(ranked, (n // 2)[..., None], axis=-1)[..., 0]
    return np.where(n > 0, (lo + hi) / 2.0, np.nan), n


def process_t_interval(process_speedups: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student's t interval of the mean log speedup over worker processes (k - 1 degrees of
    freedom).  A percentile bootstrap over 2-4 processes only ever sees the processes it was
    given and so understates how far the next run's processes may fall; t with k - 1 degrees of
    freedom is the honest width for so few (wide when they disagree, narrow when they agree)."""
    logs = np.log(np.asarray(process_speedups, dtype=np.float64))
    if logs.size < 2:
        raise ValueError("a t interval over processes needs at least 2 processes")
    half = _scipy_stats().t.ppf(0.5 + confidence / 2.0, logs.size - 1) * logs.std(ddof=1) / math.sqrt(logs.size)
    return float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half))


def wilcoxon_p(base: Sequence[float], cand: Sequence[float], baseline_first: Sequence[bool] = (),
               processes: Sequence[int] = ()) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the log ratios against 0.

    Note the floor this puts on small samples: with n pairs the exact test cannot go below
    2 / 2**n (n=5 -> 0.0625, n=8 -> 0.0078), so p < 0.01 needs at least 8 pairs.
    """
    lr = _corrected(base, cand, baseline_first, processes)
    if np.count_nonzero(lr) == 0:
        return 1.0
    return float(_scipy_stats().wilcoxon(lr, zero_method="wilcox", alternative="two-sided").pvalue)


def hodges_lehmann(base: Sequence[float], cand: Sequence[float], baseline_first: Sequence[bool] = (),
                   processes: Sequence[int] = ()) -> float:
    """exp(median of the Walsh averages of the log ratios): a robust ratio estimate."""
    lr = _corrected(base, cand, baseline_first, processes)
    i, j = np.triu_indices(lr.size)
    return float(np.exp(np.median((lr[i] + lr[j]) / 2.0)))


def mad_outliers(values: Sequence[float], k: float = 5.0) -> tuple[int, ...]:
    """Indices whose distance from the median exceeds k robust standard deviations."""
    v = np.asarray(values, dtype=np.float64)
    med = np.median(v)
    mad = np.median(np.abs(v - med)) * _MAD_TO_SIGMA
    if mad == 0.0:
        return tuple(int(i) for i in np.flatnonzero(v != med))
    return tuple(int(i) for i in np.flatnonzero(np.abs(v - med) > k * mad))


def _estimate(s: float, lo: float, hi: float, confidence: float) -> Estimate:
    # The percentile CI of the median contains the median except for pathological ties; widen
    # to include it so an Estimate is always consistent.
    return Estimate(s, min(lo, s), max(hi, s), confidence)


def _log_combination(terms: Sequence[tuple[float, Estimate]]) -> Estimate:
    """exp(sum of w * ln(e)) over (w, e), with a CI from each term's log half-width, on the side
    that moves the sum that way, added in quadrature: the CI of independent estimates."""
    if not terms or len({e.confidence for _, e in terms}) != 1:
        raise ValueError("need one or more estimates at one confidence")
    v = sum(w * math.log(e.value) for w, e in terms)
    # (a term with w < 0 lowers the sum through its upper half-width)
    down = math.sqrt(sum((w * math.log((e.value / e.low) if w > 0 else (e.high / e.value))) ** 2 for w, e in terms))
    up = math.sqrt(sum((w * math.log((e.high / e.value) if w > 0 else (e.value / e.low))) ** 2 for w, e in terms))
    return Estimate(math.exp(v), math.exp(v - down), math.exp(v + up), terms[0][1].confidence)


def ratio(a: Estimate, b: Estimate) -> Estimate:
    """a / b with the CI of independent estimates (`_log_combination`).  For two measured in the
    same minutes of one host, whose errors move together, it is wider than it needs to be, never
    narrower."""
    return _log_combination([(1.0, a), (-1.0, b)])


def geometric_mean(estimates: Sequence[Estimate]) -> Estimate:
    """The geometric mean of several speedups (GPU MODE ranks by it), with the CI of independent
    estimates (`_log_combination`), as separately timed benchmarks are."""
    return _log_combination([(1.0 / len(estimates), e) for e in estimates] if estimates else [])


def summarize(base: Sequence[float], cand: Sequence[float], *, seed: int, confidence: float = 0.95,
              n_resamples: int = 2000, processes: Sequence[int] = (),
              baseline_first: Sequence[bool] = ()) -> PairedSummary:
    """All the statistics of one paired run.  Deterministic given `seed`.

    `processes` labels each pair with the worker process that measured it; with two or more
    distinct labels the CI is the cluster bootstrap's and `stability` compares the processes.
    `baseline_first` gives each pair's order: the period effect (each process's own) is
    estimated and removed from every statistic (crossover.py); `period` reports it over all pairs."""
    s = median_speedup(base, cand, baseline_first, processes)
    ci = dict(seed=seed, confidence=confidence, n_resamples=n_resamples)
    labels = np.asarray(processes)
    orders = np.asarray(baseline_first, dtype=bool)
    if labels.size and np.unique(labels).size >= 2:
        b, c = np.asarray(base, dtype=np.float64), np.asarray(cand, dtype=np.float64)
        if labels.shape != b.shape:
            raise ValueError(f"{labels.size} process labels for {b.size} pairs")
        groups = [(b[labels == p], c[labels == p], orders[labels == p] if orders.size else ())
                  for p in np.unique(labels)]
        stability = Stability(tuple(median_speedup(gb, gc, go) for gb, gc, go in groups),
                              tuple(bootstrap_ci(gb, gc, baseline_first=go, **ci) for gb, gc, go in groups), confidence)
        # The wider of the cluster bootstrap (pairs and processes resampled) and the t interval
        # over the processes' medians (what the bootstrap cannot see with so few processes).
        b_lo, b_hi = cluster_bootstrap_ci(base, cand, labels, baseline_first=baseline_first, **ci)
        t_lo, t_hi = process_t_interval(stability.process_speedups, confidence)
        speedup = _estimate(s, min(b_lo, t_lo), max(b_hi, t_hi), confidence)
    else:
        stability = None
        speedup = _estimate(s, *bootstrap_ci(base, cand, baseline_first=baseline_first, **ci), confidence)
    return PairedSummary(
        n_pairs=len(base),
        speedup=speedup,
        hodges_lehmann=hodges_lehmann(base, cand, baseline_first, processes),
        p_value=wilcoxon_p(base, cand, baseline_first, processes),
        outliers=mad_outliers(_corrected(base, cand, baseline_first, processes)),
        stability=stability,
        period=period_effect(base, cand, baseline_first, confidence) if len(baseline_first) else None,
    )
