"""The paired sampler: warm-up, block sizing, AB-BA pairs, adaptive stopping.

It drives two `Side`s (anything that can run a block of N iterations on inputs derived from a
seed and report the mean time per iteration) and knows nothing about where the code runs: the
in-process side for trusted `compare()` and the worker-process side of the trust boundary both
plug in here.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, replace
from typing import Callable, Protocol

from .. import stats
from ..results import PairedSamples
from .schedule import BASELINE, pair_orders

# A run stops only after a whole quad (ABBA or BAAB), so that every stopping point is balanced.
_PAIR_STEP = 2


@dataclass(frozen=True)
class SamplerConfig:
    """How much to measure.  Defaults suit kernels from ~1 us to ~100 ms."""

    min_pairs: int = 10           # protocol minimum is 5; p < 0.01 needs >= 8 (Wilcoxon floor)
    max_pairs: int = 60
    warmup_s: float = 0.2         # run both sides for at least this long before measuring
    min_block_s: float = 0.002    # a block is sized to take at least this long
    max_iters_per_block: int = 4096
    target_rel_ci: float = 0.01   # stop once the speedup CI half-width (log scale) is below this
    time_budget_s: float = 30.0   # ... or once this much time has been spent measuring
    confidence: float = 0.95
    n_resamples: int = 2000
    cache_flush: str = "auto"     # auto (on for CUDA, off for CPU) | on | off
    remeasure_throttled: bool = True  # with a monitor: re-run a throttled pair after a cool-down
    cooldown_s: float = 1.0
    max_remeasures: int = 10      # per run; beyond that throttled pairs are kept (and flagged)

    def __post_init__(self) -> None:
        if self.min_pairs < 5:
            raise ValueError(f"min_pairs must be >= 5 (the protocol minimum), got {self.min_pairs}")
        if self.max_pairs < self.min_pairs:
            raise ValueError(f"max_pairs ({self.max_pairs}) must be >= min_pairs ({self.min_pairs})")
        for name in ("warmup_s", "min_block_s", "target_rel_ci", "time_budget_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.max_iters_per_block < 1:
            raise ValueError(f"max_iters_per_block must be >= 1, got {self.max_iters_per_block}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")
        if self.cache_flush not in ("auto", "on", "off"):
            raise ValueError(f"cache_flush must be auto|on|off, got {self.cache_flush!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    def per_process(self, processes: int) -> "SamplerConfig":
        """This config's share for one of `processes` worker processes: the pairs and the time
        budget divided between them, each still meeting the protocol minimum of 5 pairs."""
        if processes < 1:
            raise ValueError(f"processes must be >= 1, got {processes}")
        if processes == 1:
            return self
        lo = max(5, -(-self.min_pairs // processes))
        return replace(self, min_pairs=lo, max_pairs=max(lo, -(-self.max_pairs // processes)),
                       time_budget_s=self.time_budget_s / processes)

    @classmethod
    def from_dict(cls, d: dict) -> "SamplerConfig":
        return cls(**d)


class BlockMonitor(Protocol):
    """Device conditions around a block (device.monitor.Monitor, or a fake)."""

    def begin(self) -> None: ...

    def end(self) -> "object": ...   # has .throttled and .to_dict()


class Side(Protocol):
    """One side of the comparison (baseline or candidate)."""

    def run_block(self, iters: int, seed: int) -> float:
        """Run `iters` iterations on fresh inputs derived from `seed`; mean ns per iteration."""
        ...


# After every pair: the pairs so far and the speedup with its quick CI (None while too few).
ProgressFn = Callable[[int, "stats.Estimate | None"], None]
# Work the caller defers to the end of each pair (the timed-output checks): it then precedes the
# next pair's first block, whose side is drawn from the seed, never a fixed side.
PairEnd = Callable[[], None]
# Seconds on a monotonic clock: what the warm-up and the time budget are measured with.  Real
# timers use the host's clock; FakeTimer its simulated one, so a fake run is deterministic
# (a wall-clock budget would make the number of blocks, and so the noise drawn, vary per run).
Clock = Callable[[], float]


def _block_seed(master: int, pair: int) -> int:
    # Both sides of a pair see the same inputs (a paired design); pairs see different ones.
    return (master * 1_000_003 + pair * 7919 + 1) % (1 << 62)


def grown_iters(iters: int, block_s: float, cfg: SamplerConfig) -> int | None:
    """A block of `iters` calls took `block_s`: the next, larger block size that should reach
    cfg.min_block_s (at most 64x larger, at least 2x), or None once it is long enough."""
    if block_s >= cfg.min_block_s or iters >= cfg.max_iters_per_block:
        return None
    grow = math.ceil(cfg.min_block_s / max(block_s, 1e-9))
    return min(cfg.max_iters_per_block, iters * max(2, min(grow, 64)))


def warm_iters(ns_per_call: float, cfg: SamplerConfig) -> int:
    """The fewest calls of `ns_per_call` each that make a block of cfg.min_block_s."""
    need = math.ceil(cfg.min_block_s / max(ns_per_call * 1e-9, 1e-12))
    return max(1, min(need, cfg.max_iters_per_block))


def resized_iters(iters: int, base_ns: list[float], cand_ns: list[float], cfg: SamplerConfig) -> int | None:
    """A larger block size if the timed pairs so far ran the faster side's blocks in under half
    of cfg.min_block_s (median over the pairs), else None.

    The warm-up sizes blocks on what the sides did *then*; a candidate that runs slowly while
    it is being sized and fast once it is timed would otherwise be timed in blocks below the
    floor, where the per-block overhead's noise is a larger share of each block.  Sizes only
    grow, so re-sizing ends (at cfg.max_iters_per_block at the latest)."""
    if not base_ns or iters >= cfg.max_iters_per_block:
        return None
    fast_ns = statistics.median(min(b, c) for b, c in zip(base_ns, cand_ns))
    if fast_ns * iters * 1e-9 >= cfg.min_block_s / 2:
        return None
    return max(iters + 1, warm_iters(fast_ns, cfg))


def _warm_up_and_size(baseline: Side, candidate: Side, cfg: SamplerConfig, seed: int, clock: Clock,
                      iters: int | None = None, pair_end: PairEnd | None = None) -> int:
    """Run both sides for cfg.warmup_s and return the iterations per block.

    Iterations grow until the faster side's block takes cfg.min_block_s; at the end of the
    warm-up the count is set from the faster side's median call in the warm blocks of that
    size (`warm_iters`), since the growth steps were sized on the first, cold calls: on a 2.6 ms
    kernel against a 10 ms minimum they stopped anywhere from 2 calls (5 ms blocks, half the
    minimum) to 6 (twice what it needs, and the score's pairs took twice as long), and a first
    call that compiles left them at 1.  Not sized on the first block of the final size, so
    that size runs at least twice.  Both sides use the same count (they see the same inputs).
    Given `iters` (a later worker process of the same run), blocks keep that size: only the
    warm-up.
    """
    start = clock()
    fixed = iters is not None
    iters = iters or 1
    warm: list[float] = []   # the faster side's ns per call, in the blocks of the current size
    while True:
        tb = baseline.run_block(iters, seed)
        tc = candidate.run_block(iters, seed)
        if pair_end is not None:
            pair_end()
        bigger = None if fixed else grown_iters(iters, min(tb, tc) * iters * 1e-9, cfg)
        if bigger is not None:
            iters, warm = bigger, []
            continue
        warm.append(min(tb, tc))
        if clock() - start < cfg.warmup_s:
            continue
        if fixed:
            return iters
        if len(warm) >= 2:   # the first block of a size may hold a compile: sized without it
            return warm_iters(statistics.median(warm[1:]), cfg)


def sample_pairs(baseline: Side, candidate: Side, cfg: SamplerConfig, *, seed: int,
                 progress: ProgressFn | None = None, monitor: BlockMonitor | None = None,
                 clock: Clock = time.perf_counter, iters: int | None = None,
                 pair_end: PairEnd | None = None) -> PairedSamples:
    """Measure AB-BA pairs until the CI target, the time budget or max_pairs is reached.

    The scorer's own work between blocks is the same after every pair, whichever side ran
    first: `pair_end` (the caller's deferred work), then the stop check (a quick order-statistic
    CI: microseconds; the bootstrap runs once, on the result), then `progress`.  Between the two
    blocks of a pair nothing runs but the sides themselves.  The run stops only after a whole
    quad; max_pairs, if odd, is rounded up to keep it balanced.

    With a `monitor`, each pair records the device conditions of its two blocks; a pair that
    ran throttled is, if cfg.remeasure_throttled, discarded and re-run after cfg.cooldown_s.
    `iters` fixes the block size (otherwise sized during the warm-up, and re-sized, the pairs so
    far discarded, if the timed pairs run blocks below half the floor: `resized_iters`).
    """
    fixed = iters is not None
    iters = _warm_up_and_size(baseline, candidate, cfg, _block_seed(seed, -1), clock, iters, pair_end)
    sides = {BASELINE: baseline, "candidate": candidate}
    limit = cfg.max_pairs + cfg.max_pairs % _PAIR_STEP
    orders = pair_orders(seed, limit)
    first = [order[0] == BASELINE for order in orders]   # per pair: did the baseline run first
    base_ns: list[float] = []
    cand_ns: list[float] = []
    conditions: list[dict] = []
    discarded = 0
    start = clock()
    stop_reason = "max_pairs"
    i = 0
    while i < limit:
        times, seen = {}, []
        for label in orders[i]:
            if monitor is not None:
                monitor.begin()
            times[label] = sides[label].run_block(iters, _block_seed(seed, i))
            if monitor is not None:
                seen.append(monitor.end())
        if pair_end is not None:
            pair_end()
        throttled = any(c.throttled for c in seen)
        if throttled and cfg.remeasure_throttled and discarded < cfg.max_remeasures:
            discarded += 1
            time.sleep(cfg.cooldown_s)
            continue  # same pair index, same inputs, same order, again
        base_ns.append(times[BASELINE])
        cand_ns.append(times["candidate"])
        if seen:
            conditions.append({"blocks": [c.to_dict() for c in seen], "throttled": throttled})
        i += 1
        bigger = None if fixed or i % _PAIR_STEP else resized_iters(iters, base_ns, cand_ns, cfg)
        if bigger is not None:   # the pairs so far ran blocks below the floor: start again
            iters, base_ns, cand_ns, conditions, i = bigger, [], [], [], 0
            continue
        estimate = stats.quick_ci(base_ns, cand_ns, first[:i], cfg.confidence)
        if i >= cfg.min_pairs and i % _PAIR_STEP == 0:
            if estimate is not None and estimate.rel_half_width <= cfg.target_rel_ci:
                stop_reason = "ci_target"
            elif clock() - start >= cfg.time_budget_s:
                stop_reason = "time_budget"
        if progress is not None:
            progress(i, estimate)
        if stop_reason != "max_pairs":
            break
    return PairedSamples(baseline_ns=tuple(base_ns), candidate_ns=tuple(cand_ns),
                         iters_per_block=iters, stop_reason=stop_reason, conditions=tuple(conditions),
                         discarded_throttled=discarded, baseline_first=tuple(first[:i]))
