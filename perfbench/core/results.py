"""Result records: frozen, validated on construction, JSON round-trippable.

Raw samples are the record; statistics are derived from them (deterministically, from the
recorded seed) and written alongside only for readers of the JSON.  `from_dict` ignores the
derived part and recomputes it, so an edited summary cannot be smuggled back in.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from . import crossover, stats
from .version import __version__

# 2: PairedSamples.processes (the worker process of each pair) and summary.stability.  Version 1
# documents are still read: all their pairs came from one process.
# 3: PairedSamples.baseline_first (each pair's order, drawn from the seed) and
# summary.period_effect.  Versions 1 and 2 ran AB, BA, AB, ...: read so.
# 4: ComparisonResult.solution (--s-ref live: the task's solution against the baseline, in pairs
# interleaved with the candidate's) and ScoreResult.live_s_ref.  Versions 1-3 never timed it.
SCHEMA_VERSION = 4
READABLE_SCHEMAS = (1, 2, 3, 4)


class SchemaError(ValueError):
    """A result document that this version of perfbench cannot read."""


def _check_times(name: str, values: tuple[float, ...]) -> None:
    for v in values:
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must hold finite positive times, found {v!r}")


@dataclass(frozen=True)
class PairedSamples:
    """Per-pair mean time per iteration (ns) of each side, in pair order.

    Pair i ran the baseline first if `baseline_first[i]` (empty: order unknown, and no period
    effect is estimated); every block ran `iters_per_block` iterations.  `processes[i]` numbers
    the pair of worker processes (a fresh baseline and candidate interpreter) that measured pair
    i; empty when all came from one.
    """

    baseline_ns: tuple[float, ...]
    candidate_ns: tuple[float, ...]
    iters_per_block: int
    stop_reason: str
    conditions: tuple[dict, ...] = ()   # per pair, when a device monitor ran: clocks, throttling
    discarded_throttled: int = 0        # pairs re-measured because they ran throttled
    processes: tuple[int, ...] = ()     # per pair: which worker processes measured it
    baseline_first: tuple[bool, ...] = ()   # per pair: did the baseline run first

    def __post_init__(self) -> None:
        object.__setattr__(self, "baseline_ns", tuple(float(x) for x in self.baseline_ns))
        object.__setattr__(self, "candidate_ns", tuple(float(x) for x in self.candidate_ns))
        object.__setattr__(self, "processes", tuple(self.processes))
        object.__setattr__(self, "baseline_first", tuple(self.baseline_first))
        if len(self.baseline_ns) != len(self.candidate_ns):
            raise ValueError("baseline and candidate need the same number of pairs")
        if self.processes and (len(self.processes) != len(self.baseline_ns)
                               or not all(type(p) is int and p >= 0 for p in self.processes)):
            raise ValueError("processes must hold one process number (an int >= 0) per pair")
        if self.baseline_first and (len(self.baseline_first) != len(self.baseline_ns)
                                    or not all(type(f) is bool for f in self.baseline_first)):
            raise ValueError("baseline_first must hold one bool per pair")
        if not self.baseline_ns:
            raise ValueError("no pairs")
        _check_times("baseline_ns", self.baseline_ns)
        _check_times("candidate_ns", self.candidate_ns)
        if self.iters_per_block < 1:
            raise ValueError(f"iters_per_block must be >= 1, got {self.iters_per_block}")

    @property
    def n_pairs(self) -> int:
        return len(self.baseline_ns)

    @classmethod
    def concat(cls, parts: "list[PairedSamples]") -> "PairedSamples":
        """The pairs of several worker processes, in order, labelled 0, 1, ... by part."""
        if not parts or len({p.iters_per_block for p in parts}) != 1:
            raise ValueError("concat needs one or more parts with the same iters_per_block")
        return cls(sum((p.baseline_ns for p in parts), ()), sum((p.candidate_ns for p in parts), ()),
                   parts[0].iters_per_block, ",".join(p.stop_reason for p in parts),
                   sum((p.conditions for p in parts), ()), sum(p.discarded_throttled for p in parts),
                   sum(((j,) * p.n_pairs for j, p in enumerate(parts)), ()),
                   sum((p.baseline_first for p in parts), ()) if all(p.baseline_first for p in parts) else ())

    @property
    def throttled_pairs(self) -> tuple[int, ...]:
        return tuple(i for i, c in enumerate(self.conditions) if c.get("throttled"))

    def to_dict(self) -> dict[str, Any]:
        return {"baseline_ns": list(self.baseline_ns), "candidate_ns": list(self.candidate_ns),
                "iters_per_block": self.iters_per_block, "stop_reason": self.stop_reason,
                "conditions": list(self.conditions), "discarded_throttled": self.discarded_throttled,
                "processes": list(self.processes), "baseline_first": list(self.baseline_first)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PairedSamples":
        """A document's samples; one without `baseline_first` (schema 1 and 2) ran AB, BA, ...
        in each process."""
        processes = tuple(d.get("processes", ()))
        if "baseline_first" in d:
            first = tuple(bool(f) for f in d["baseline_first"])
        else:
            counts = [processes.count(j) for j in sorted(set(processes))] or [len(d["baseline_ns"])]
            first = sum((crossover.alternating_orders(n) for n in counts), ())
        return cls(tuple(d["baseline_ns"]), tuple(d["candidate_ns"]), int(d["iters_per_block"]),
                   str(d["stop_reason"]), tuple(d.get("conditions", ())), int(d.get("discarded_throttled", 0)),
                   processes, first)


@dataclass(frozen=True)
class ComparisonResult:
    """One paired comparison: what was measured, how, where, and the raw samples."""

    baseline: str                 # a label: "path.py:function"
    candidate: str
    device: str
    timer: str
    seed: int
    samples: PairedSamples
    config: dict[str, Any]        # SamplerConfig.to_dict()
    fingerprint: dict[str, Any]   # host / device record
    perfbench_version: str = __version__
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. KernelBench overrides
    solution: PairedSamples | None = None   # --s-ref live: the solution's pairs, interleaved with these

    def __post_init__(self) -> None:
        if self.schema_version != SCHEMA_VERSION:
            raise SchemaError(f"schema_version {self.schema_version} is not {SCHEMA_VERSION}")
        if not isinstance(self.seed, int):
            raise ValueError(f"seed must be an int, got {self.seed!r}")
        if self.solution is not None and not 0 < self.solution.n_pairs <= self.samples.n_pairs:
            raise ValueError(f"{self.solution.n_pairs} solution pairs for {self.samples.n_pairs} candidate pairs "
                             "(interleaved: at most one per round, and the candidate has one in every round)")

    def _summarize(self, samples: PairedSamples) -> stats.PairedSummary:
        return stats.summarize(samples.baseline_ns, samples.candidate_ns, seed=self.seed,
                               confidence=self.config.get("confidence", 0.95),
                               n_resamples=self.config.get("n_resamples", 2000), processes=samples.processes,
                               baseline_first=samples.baseline_first)

    @cached_property
    def solution_summary(self) -> stats.PairedSummary | None:
        """--s-ref live: the solution's speedup over the baseline in this run (the live s_ref)."""
        return None if self.solution is None else self._summarize(self.solution)

    @property
    def versus_solution(self) -> stats.Estimate | None:
        """--s-ref live: the candidate's speedup over the solution's (stats.ratio)."""
        return None if self.solution is None else stats.ratio(self.summary.speedup, self.solution_summary.speedup)

    @cached_property
    def summary(self) -> stats.PairedSummary:
        return self._summarize(self.samples)

    @property
    def speedup(self) -> float:
        """t_baseline / t_candidate (median of per-pair ratios); > 1 means candidate faster."""
        return self.summary.speedup.value

    @property
    def ci(self) -> tuple[float, float]:
        return self.summary.speedup.low, self.summary.speedup.high

    @property
    def p_value(self) -> float:
        return self.summary.p_value

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the samples say about the measurement itself (derived, like the summary)."""
        p, ci = self.summary.period, self.summary.speedup
        if p is not None and p.significant() and abs(p.value) > ci.rel_half_width:
            return (f"order_effect: the first block of a pair ran {100 * (p.first_over_second - 1):+.1f}% against "
                    f"the second (p = {p.p_value:.2g}), more than the speedup's CI half-width "
                    f"({100 * ci.rel_half_width:.1f}%); removed from every pair (docs/verdict.md)",)
        return ()

    def to_dict(self) -> dict[str, Any]:
        s = self.summary
        return {
            "schema_version": self.schema_version,
            "perfbench_version": self.perfbench_version,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "device": self.device,
            "timer": self.timer,
            "seed": self.seed,
            "config": dict(self.config),
            "fingerprint": dict(self.fingerprint),
            "extra": dict(self.extra),
            "samples": self.samples.to_dict(),
            "summary": {  # derived; ignored by from_dict
                "speedup": s.speedup.value, "ci_low": s.speedup.low, "ci_high": s.speedup.high,
                "confidence": s.speedup.confidence, "p_value": s.p_value,
                "hodges_lehmann": s.hodges_lehmann, "n_pairs": s.n_pairs,
                "outlier_pairs": list(s.outliers),
                "baseline_median_ns": _median(self.samples.baseline_ns),
                "candidate_median_ns": _median(self.samples.candidate_ns),
                "stability": s.stability.to_dict() if s.stability is not None else None,
                "period_effect": s.period.to_dict() if s.period is not None else None,
                "by_position_median_ns": _by_position(self.samples),
                "warnings": list(self.warnings),
            },
            "solution": None if self.solution is None else {
                "samples": self.solution.to_dict(),
                "summary": {  # derived; ignored by from_dict
                    "speedup": self.solution_summary.speedup.value, "ci_low": self.solution_summary.speedup.low,
                    "ci_high": self.solution_summary.speedup.high,
                    "period_effect": (self.solution_summary.period.to_dict()
                                      if self.solution_summary.period is not None else None),
                    "solution_median_ns": _median(self.solution.candidate_ns),
                    "candidate_over_solution": self.versus_solution.value,
                    "ratio_ci": [self.versus_solution.low, self.versus_solution.high]}},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ComparisonResult":
        version = d.get("schema_version")
        if version not in READABLE_SCHEMAS:
            raise SchemaError(f"cannot read schema_version {version!r} (this perfbench reads {READABLE_SCHEMAS})")
        return cls(baseline=d["baseline"], candidate=d["candidate"], device=d["device"],
                   timer=d["timer"], seed=int(d["seed"]),
                   samples=PairedSamples.from_dict(d["samples"]), config=dict(d["config"]),
                   fingerprint=dict(d["fingerprint"]), perfbench_version=d["perfbench_version"],
                   extra=dict(d.get("extra", {})),
                   solution=PairedSamples.from_dict(d["solution"]["samples"]) if d.get("solution") else None)


def _by_position(samples: PairedSamples) -> dict[str, dict[str, float | None]] | None:
    """The side-by-position check: each side's median time when it ran first, and second."""
    if not samples.baseline_first:
        return None

    def median_where(times: tuple[float, ...], ran_first: bool, side_is_baseline: bool) -> float | None:
        picked = tuple(t for t, f in zip(times, samples.baseline_first) if f == (ran_first == side_is_baseline))
        return _median(picked) if picked else None

    return {side: {"first": median_where(times, True, side == "baseline"),
                   "second": median_where(times, False, side == "baseline")}
            for side, times in (("baseline", samples.baseline_ns), ("candidate", samples.candidate_ns))}


def _median(xs: tuple[float, ...]) -> float:
    ys = sorted(xs)
    n = len(ys)
    return ys[n // 2] if n % 2 else 0.5 * (ys[n // 2 - 1] + ys[n // 2])
