"""Decision-aware stopping: end a score's timing as soon as its reward is settled.

A score splits its pairs between fresh worker processes (docs/verdict.md, "processes"); its CI
includes the variance between them only from the second process on.  So the run may stop early
only at a process boundary, never inside one, and only once `min_processes` (default 3) have
measured: the verdict publishes the speedup beside the reward, and on a 2-core VM the variance
between processes dominates its error, which two processes estimate with one degree of freedom
(benchmarks/results/timing.md, "Why an early stop leaves 3 processes").  With the default 3 processes a
score therefore measures them all; the rule saves processes from the fourth on.  The decisions, on the CI of every pair so far:

- `r_perf_zero`: the speedup's CI lies entirely at or below s_ref (R_perf = 0 whatever more pairs say);
- `r_perf_one`: the CI lies entirely at or above s_ref**2 (R_perf = 1);
- `r_perf_settled`: R_perf over the CI spans less than `target_r_ci`;
- `ci_target`: the speedup's CI is as narrow as `target_rel_ci` either side (`--ci-target`).

Each early look is a sequential test; looking k times at a 95% CI would let a run stop on a
chance excursion more often than 5% of the time.  The looks therefore use a Bonferroni-widened
CI (confidence 1 - (1 - c) / (interim looks + 1)), so the chance that any look stops a run whose
truth lies on the other side of a boundary stays within the nominal level.  A run that stopped
early also *reports* that wider CI: stopping because two processes happened to agree closely
selects runs whose nominal CI is too narrow (with the nominal CI, 94.5% coverage at s = s_ref in
200 seeded runs; with the look's CI, 98%).  benchmarks/stopping_coverage.py runs the study.
Pure: stats and the reward only, no I/O.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

from . import stats
from .results import PairedSamples
from .scoring import r_perf


@dataclass(frozen=True)
class StoppingRule:
    """When a score of `processes` worker processes may stop after one of them."""

    processes: int
    s_ref: float | None             # None: no reward to decide (a problem without s_ref)
    confidence: float = 0.95        # of the reported CI
    target_r_ci: float | None = 0.05   # None: never stop on R_perf's CI width
    target_rel_ci: float | None = 0.03  # the speedup CI half-width (log scale) that ends a run anyway
                                        # (None: never on the width)
    min_processes: int = 3          # no stop before this many processes measured (>= 2)

    def __post_init__(self) -> None:
        if self.processes < 1:
            raise ValueError(f"processes must be >= 1, got {self.processes}")
        if self.s_ref is not None and not self.s_ref > 1:
            raise ValueError(f"s_ref must be > 1, got {self.s_ref}")
        if self.target_r_ci is not None and not 0 <= self.target_r_ci <= 1:
            raise ValueError(f"target_r_ci must be in [0, 1], got {self.target_r_ci}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")
        if self.target_rel_ci is not None and not 0 <= self.target_rel_ci < 1:
            raise ValueError(f"target_rel_ci must be in [0, 1), got {self.target_rel_ci}")
        if self.min_processes < 2:
            raise ValueError(f"min_processes must be >= 2 (one process's CI knows nothing of the variance "
                             f"between processes), got {self.min_processes}")

    @property
    def interim_looks(self) -> int:
        """After process min_processes, ..., processes - 1 (the last one ends the run anyway)."""
        return max(0, self.processes - self.min_processes)

    @property
    def look_confidence(self) -> float:
        return 1.0 - (1.0 - self.confidence) / (self.interim_looks + 1)

    def reported_confidence(self, decision: str | None) -> float:
        """The confidence of the CI a run reports: the look's when it stopped early."""
        return self.confidence if decision is None else self.look_confidence

    def decide(self, speedup: stats.Estimate) -> str | None:
        """The reason the speedup's CI settles the run, or None."""
        low, high = speedup.low, speedup.high
        if self.s_ref is not None:
            if high <= self.s_ref:
                return "r_perf_zero"
            if low >= self.s_ref ** 2:
                return "r_perf_one"
            if self.target_r_ci is not None and r_perf(high, self.s_ref) - r_perf(low, self.s_ref) <= self.target_r_ci:
                return "r_perf_settled"
        if self.target_rel_ci is not None and speedup.rel_half_width <= self.target_rel_ci:
            return "ci_target"
        return None

    def to_dict(self) -> dict:
        return dict(asdict(self), look_confidence=self.look_confidence)


def interim_decision(parts: Sequence[PairedSamples], rule: StoppingRule, *, seed: int,
                     n_resamples: int = 2000) -> str | None:
    """After the process that measured `parts[-1]`: why the run may stop now, or None.

    Never before `rule.min_processes` have measured (the first alone knows nothing of the variance
    between processes) nor after the last (the run ends there anyway)."""
    if not rule.min_processes <= len(parts) < rule.processes:
        return None
    s = PairedSamples.concat(list(parts))
    summary = stats.summarize(s.baseline_ns, s.candidate_ns, seed=seed, confidence=rule.look_confidence,
                              n_resamples=n_resamples, processes=s.processes, baseline_first=s.baseline_first)
    return rule.decide(summary.speedup)
