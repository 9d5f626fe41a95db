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

from . import __version__, stats

SCHEMA_VERSION = 1


class SchemaError(ValueError):
    """A result document that this version of perfbench cannot read."""


def _check_times(name: str, values: tuple[float, ...]) -> None:
    for v in values:
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must hold finite positive times, found {v!r}")


@dataclass(frozen=True)
class PairedSamples:
    """Per-pair mean time per iteration (ns) of each side, in pair order.

    Pair i ran in the order `timing.schedule.pair_order(i)`; every block ran
    `iters_per_block` iterations.
    """

    baseline_ns: tuple[float, ...]
    candidate_ns: tuple[float, ...]
    iters_per_block: int
    stop_reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "baseline_ns", tuple(float(x) for x in self.baseline_ns))
        object.__setattr__(self, "candidate_ns", tuple(float(x) for x in self.candidate_ns))
        if len(self.baseline_ns) != len(self.candidate_ns):
            raise ValueError("baseline and candidate need the same number of pairs")
        if not self.baseline_ns:
            raise ValueError("no pairs")
        _check_times("baseline_ns", self.baseline_ns)
        _check_times("candidate_ns", self.candidate_ns)
        if self.iters_per_block < 1:
            raise ValueError(f"iters_per_block must be >= 1, got {self.iters_per_block}")

    @property
    def n_pairs(self) -> int:
        return len(self.baseline_ns)

    def to_dict(self) -> dict[str, Any]:
        return {"baseline_ns": list(self.baseline_ns), "candidate_ns": list(self.candidate_ns),
                "iters_per_block": self.iters_per_block, "stop_reason": self.stop_reason}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PairedSamples":
        return cls(tuple(d["baseline_ns"]), tuple(d["candidate_ns"]), int(d["iters_per_block"]),
                   str(d["stop_reason"]))


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

    def __post_init__(self) -> None:
        if self.schema_version != SCHEMA_VERSION:
            raise SchemaError(f"schema_version {self.schema_version} is not {SCHEMA_VERSION}")
        if not isinstance(self.seed, int):
            raise ValueError(f"seed must be an int, got {self.seed!r}")

    @cached_property
    def summary(self) -> stats.PairedSummary:
        return stats.summarize(self.samples.baseline_ns, self.samples.candidate_ns, seed=self.seed,
                               confidence=self.config.get("confidence", 0.95),
                               n_resamples=self.config.get("n_resamples", 2000))

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
            },
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ComparisonResult":
        version = d.get("schema_version")
        if version != SCHEMA_VERSION:
            raise SchemaError(f"cannot read schema_version {version!r} (this perfbench reads {SCHEMA_VERSION})")
        return cls(baseline=d["baseline"], candidate=d["candidate"], device=d["device"],
                   timer=d["timer"], seed=int(d["seed"]),
                   samples=PairedSamples.from_dict(d["samples"]), config=dict(d["config"]),
                   fingerprint=dict(d["fingerprint"]), perfbench_version=d["perfbench_version"],
                   schema_version=version, extra=dict(d.get("extra", {})))


def _median(xs: tuple[float, ...]) -> float:
    ys = sorted(xs)
    n = len(ys)
    return ys[n // 2] if n % 2 else 0.5 * (ys[n // 2 - 1] + ys[n // 2])
