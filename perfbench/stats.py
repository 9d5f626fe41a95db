"""Statistics of paired timings.  Pure: numpy/scipy only, no I/O, no torch, no global RNG.

Every function takes the per-pair times of the baseline and the candidate (same length, same
order) and works on the per-pair log ratio ``ln(t_base / t_cand)``: a positive value means the
candidate was faster in that pair.  The speedup reported everywhere is the median of the
per-pair ratios, ``s = median_i(t_base_i / t_cand_i)``, as the protocol defines it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as _sps

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
class PairedSummary:
    """Everything derived from one set of paired samples."""

    n_pairs: int
    speedup: Estimate          # median of per-pair ratios, bootstrap CI
    hodges_lehmann: float      # HL estimate of the ratio (exp of HL location of the log ratios)
    p_value: float             # Wilcoxon signed-rank, two-sided, on the log ratios
    outliers: tuple[int, ...]  # pair indices flagged by the MAD rule

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


def median_speedup(base: Sequence[float], cand: Sequence[float]) -> float:
    """``median_i(t_base_i / t_cand_i)``.

    Computed as exp(median(log ratio)); for an odd count this is exactly the median ratio, for
    an even count it is the geometric mean of the two middle ratios, which keeps s(A,B) ==
    1/s(B,A) exactly.
    """
    return float(np.exp(np.median(log_ratios(base, cand))))


def bootstrap_ci(base: Sequence[float], cand: Sequence[float], *, seed: int,
                 confidence: float = 0.95, n_resamples: int = 2000) -> tuple[float, float]:
    """Percentile bootstrap CI of the median speedup, resampling whole pairs.

    Deterministic given `seed`.  Percentile (not BCa) because the median's bootstrap
    distribution is discrete for small n and BCa's acceleration estimate is unstable there.
    """
    lr = log_ratios(base, cand)
    if lr.size == 1 or np.all(lr == lr[0]):
        v = float(np.exp(lr[0] if lr.size == 1 else np.median(lr)))
        return v, v
    res = _sps.bootstrap((lr,), np.median, confidence_level=confidence, n_resamples=n_resamples,
                         method="percentile", vectorized=True, axis=-1,
                         random_state=np.random.default_rng(seed))
    lo, hi = res.confidence_interval
    return float(np.exp(lo)), float(np.exp(hi))


def wilcoxon_p(base: Sequence[float], cand: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the log ratios against 0.

    Note the floor this puts on small samples: with n pairs the exact test cannot go below
    2 / 2**n (n=5 -> 0.0625, n=8 -> 0.0078), so p < 0.01 needs at least 8 pairs.
    """
    lr = log_ratios(base, cand)
    if np.count_nonzero(lr) == 0:
        return 1.0
    return float(_sps.wilcoxon(lr, zero_method="wilcox", alternative="two-sided").pvalue)


def hodges_lehmann(base: Sequence[float], cand: Sequence[float]) -> float:
    """exp(median of the Walsh averages of the log ratios): a robust ratio estimate."""
    lr = log_ratios(base, cand)
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


def summarize(base: Sequence[float], cand: Sequence[float], *, seed: int,
              confidence: float = 0.95, n_resamples: int = 2000) -> PairedSummary:
    """All the statistics of one paired run.  Deterministic given `seed`."""
    s = median_speedup(base, cand)
    lo, hi = bootstrap_ci(base, cand, seed=seed, confidence=confidence, n_resamples=n_resamples)
    # The percentile CI of the median contains the median except for pathological ties; widen
    # to include it so an Estimate is always consistent.
    lo, hi = min(lo, s), max(hi, s)
    return PairedSummary(
        n_pairs=len(base),
        speedup=Estimate(s, lo, hi, confidence),
        hodges_lehmann=hodges_lehmann(base, cand),
        p_value=wilcoxon_p(base, cand),
        outliers=mad_outliers(log_ratios(base, cand)),
    )
