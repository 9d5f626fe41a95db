"""Is a benchmark a regression?  Pure statistics, no I/O (the plugin's one decision).

A slowdown fails a run only when it is *both* statistically real (the speedup's whole CI lies
below 1) *and* larger than the threshold (the point estimate is below 1 / (1 + threshold)).
Paired comparisons (AB-BA in one process, one minute) use the threshold as given; unpaired ones
(against a saved run of another session) have no pairing to cancel drift, so their threshold is
widened (`UNPAIRED_WIDENING`) and the verdict says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

UNPAIRED_WIDENING = 3.0   # run-to-run drift on a shared CI host is several times the paired noise


@dataclass(frozen=True)
class Judgement:
    speedup: float                 # reference time / current time: < 1 is slower
    ci: tuple[float, float]
    paired: bool
    threshold: float               # the slowdown allowed, as used (widened when unpaired)
    regression: bool
    significant: bool              # the CI excludes 1 (either way)

    def __post_init__(self) -> None:
        if not (self.speedup > 0 and 0 < self.ci[0] <= self.ci[1]):
            raise ValueError(f"speedup {self.speedup} with CI {self.ci}: must be positive and ordered")

    def to_dict(self) -> dict:
        return {"speedup": self.speedup, "ci": list(self.ci), "paired": self.paired, "threshold": self.threshold,
                "regression": self.regression, "significant": self.significant}

    @classmethod
    def from_dict(cls, d: dict) -> "Judgement":
        return cls(float(d["speedup"]), (float(d["ci"][0]), float(d["ci"][1])), bool(d["paired"]),
                   float(d["threshold"]), bool(d["regression"]), bool(d["significant"]))

    @property
    def slowdown(self) -> float:
        """How much slower, as a fraction (0.25: 25% slower); negative when faster."""
        return 1.0 / self.speedup - 1.0

    def describe(self) -> str:
        kind = "paired" if self.paired else "unpaired (saved run)"
        lo, hi = self.ci
        if self.regression:
            return (f"{self.slowdown:.1%} slower ({kind}): speedup {self.speedup:.3f}x, CI [{lo:.3f}, {hi:.3f}] "
                    f"entirely below 1 and beyond the {self.threshold:.0%} threshold")
        if self.speedup < 1 and self.significant:
            return (f"{self.slowdown:.1%} slower ({kind}), within the {self.threshold:.0%} threshold: "
                    f"speedup {self.speedup:.3f}x, CI [{lo:.3f}, {hi:.3f}]")
        return f"speedup {self.speedup:.3f}x, CI [{lo:.3f}, {hi:.3f}] ({kind}): no significant slowdown"


def judge(speedup: float, ci: tuple[float, float], *, threshold: float, paired: bool) -> Judgement:
    if not threshold >= 0:
        raise ValueError(f"threshold must be >= 0, got {threshold}")
    used = threshold if paired else threshold * UNPAIRED_WIDENING
    significant = ci[1] < 1.0 or ci[0] > 1.0
    regression = ci[1] < 1.0 and speedup < 1.0 / (1.0 + used)
    return Judgement(speedup, (float(ci[0]), float(ci[1])), paired, used, regression, significant)


def unpaired_speedup(reference_ns: Sequence[float], current_ns: Sequence[float], *, seed: int,
                     confidence: float = 0.95, n_resamples: int = 2000) -> tuple[float, tuple[float, float]]:
    """Ratio of medians (reference / current) with a percentile-bootstrap CI that resamples the
    two runs independently (nothing pairs them)."""
    ref, cur = np.asarray(reference_ns, float), np.asarray(current_ns, float)
    if len(ref) < 2 or len(cur) < 2 or (ref <= 0).any() or (cur <= 0).any():
        raise ValueError("each run needs at least 2 positive samples")
    rng = np.random.default_rng(seed)
    r = np.median(rng.choice(ref, (n_resamples, len(ref))), axis=1)
    c = np.median(rng.choice(cur, (n_resamples, len(cur))), axis=1)
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(r / c, [tail, 100 - tail])
    return float(np.median(ref) / np.median(cur)), (float(lo), float(hi))
