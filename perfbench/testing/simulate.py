"""A whole score's timing, simulated with FakeTimer: worker processes that each draw their own
offset (what a fresh interpreter's memory layout does to a real kernel), pairs through the real
sampler, and the real stopping rule between processes.  Deterministic given the seed; what
tests/unit/test_stopping.py and benchmarks/stopping_coverage.py measure the rule's error rates with.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core import stats
from ..core.results import PairedSamples
from ..core.stopping import StoppingRule, interim_decision
from ..timing.inprocess import InProcessSide
from ..timing.sampler import SamplerConfig, sample_pairs
from .timers import FakeKernel, FakeTimer


@dataclass(frozen=True)
class SimulatedHost:
    """Per-pair noise (log sigma of one call) and between-process spread (log sigma of a
    process's offset on the candidate's cost)."""

    call_noise: float = 0.03
    process_sigma: float = 0.02


@dataclass(frozen=True)
class SimulatedRun:
    samples: PairedSamples
    decision: str | None
    summary: stats.PairedSummary   # the reported statistics (nominal confidence)

    def covers(self, true_speedup: float) -> bool:
        return self.summary.speedup.low <= true_speedup <= self.summary.speedup.high


def simulated_score(true_speedup: float, rule: StoppingRule, sampler: SamplerConfig, host: SimulatedHost,
                    seed: int, base_ns: float = 1e6) -> SimulatedRun:
    """One score of a candidate whose expected speedup over a fresh process is `true_speedup`."""
    rng = np.random.default_rng(seed)
    per_process = sampler.per_process(rule.processes)
    parts: list[PairedSamples] = []
    decision = None
    for j in range(rule.processes):
        offset = math.exp(rng.normal(0.0, host.process_sigma))
        timer = FakeTimer(noise=host.call_noise, seed=int(rng.integers(1 << 62)))
        sides = [InProcessSide(label, FakeKernel(label, ns), lambda s: (), timer)
                 for label, ns in (("baseline", base_ns), ("candidate", base_ns / true_speedup * offset))]
        parts.append(sample_pairs(*sides, per_process, seed=int(rng.integers(1 << 62)), clock=timer.clock_s,
                                  iters=parts[0].iters_per_block if parts else None))
        decision = interim_decision(parts, rule, seed=seed, n_resamples=sampler.n_resamples)
        if decision is not None:
            break
    samples = PairedSamples.concat(parts)
    summary = stats.summarize(samples.baseline_ns, samples.candidate_ns, seed=seed,
                              confidence=rule.reported_confidence(decision),
                              n_resamples=sampler.n_resamples, processes=samples.processes,
                              baseline_first=samples.baseline_first)
    return SimulatedRun(samples, decision, summary)
