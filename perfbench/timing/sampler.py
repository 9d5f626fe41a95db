"""The paired sampler: warm-up, block sizing, AB-BA pairs, adaptive stopping.

It drives two `Side`s (anything that can run a block of N iterations on inputs derived from a
seed and report the mean time per iteration) and knows nothing about where the code runs: the
in-process side for trusted `compare()` and the worker-process side of the trust boundary both
plug in here.
"""
from __future__ import annotations

import itertools
import math
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Mapping, Protocol, Sequence

import numpy as np

from ..core import stats
from ..core.results import PairedSamples
from ..core.score_key import block_seed, keyed_seed
from .schedule import BASELINE, CANDIDATE, pair_orders

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


def resized_iters(iters: int, fastest_ns: Sequence[float], cfg: SamplerConfig) -> int | None:
    """A larger block size if the timed pairs so far ran the fastest side's blocks (`fastest_ns`,
    per pair) in under half of cfg.min_block_s (median over the pairs), else None.

    The warm-up sizes blocks on what the sides did *then*; a candidate that runs slowly while
    it is being sized and fast once it is timed would otherwise be timed in blocks below the
    floor, where the per-block overhead's noise is a larger share of each block.  Sizes only
    grow, so re-sizing ends (at cfg.max_iters_per_block at the latest)."""
    if not fastest_ns or iters >= cfg.max_iters_per_block:
        return None
    fast_ns = statistics.median(fastest_ns)
    if fast_ns * iters * 1e-9 >= cfg.min_block_s / 2:
        return None
    return max(iters + 1, warm_iters(fast_ns, cfg))


def _warm_up_and_size(sides: Sequence[Side], cfg: SamplerConfig, seed: int, clock: Clock,
                      iters: int | None = None, pair_end: PairEnd | None = None) -> int:
    """Run every side for cfg.warmup_s, and at least twice at the final block size, and return
    the iterations per block.

    Iterations grow until the fastest side's block takes cfg.min_block_s; at the end of the
    warm-up the count is set from the fastest side's median call in the warm blocks of that
    size (`warm_iters`), since the growth steps were sized on the first, cold calls: on a 2.6 ms
    kernel against a 10 ms minimum they stopped anywhere from 2 calls (5 ms blocks, half the
    minimum) to 6 (twice what it needs, and the score's pairs took twice as long), and a first
    call that compiles left them at 1.  Not sized on the first block of a size.  Every side uses
    the same count (they see the same inputs).  Given `iters` (a later worker process of the
    same run), blocks keep that size: only the warm-up.

    The final size runs twice before any pair is timed: a side's first block of a size is cold
    (its outputs' memory is first touched there), and so is a fresh process's first block.  A
    warm-up that ends on time alone can end on that block, and the first timed pair of every
    process is then an outlier that leans against the side with the shorter blocks
    (benchmarks/results/timing.md, "#59 measured first").
    """
    start = clock()
    sized = iters is not None
    iters = iters or 1
    warm: list[float] = []   # the fastest side's ns per call, in the blocks of the current size
    while True:
        fastest = min(side.run_block(iters, seed) for side in sides)
        if pair_end is not None:
            pair_end()
        bigger = None if sized else grown_iters(iters, fastest * iters * 1e-9, cfg)
        if bigger is not None:
            iters, warm = bigger, []
            continue
        warm.append(fastest)
        if clock() - start < cfg.warmup_s or len(warm) < 2:
            continue
        if sized:
            return iters
        final, sized = warm_iters(statistics.median(warm[1:]), cfg), True
        if final == iters:
            return iters
        iters, warm = final, []   # (twice more at the final size)


def sample_pairs(baseline: Side, candidate: Side, cfg: SamplerConfig, *, seed: int,
                 progress: ProgressFn | None = None, monitor: BlockMonitor | None = None,
                 clock: Clock = time.perf_counter, iters: int | None = None,
                 pair_end: PairEnd | None = None) -> PairedSamples:
    """Measure AB-BA pairs until the CI target, the time budget or max_pairs is reached: the
    one-comparison case of `sample_interleaved`."""
    return sample_interleaved(baseline, {CANDIDATE: candidate}, cfg, seed=seed, progress=progress, monitor=monitor,
                              clock=clock, iters=iters, pair_end=pair_end)[CANDIDATE]


def interleaved_slots(seed: int, n_rounds: int, labels: tuple[str, ...],
                      every: Mapping[str, int] | None = None) -> list[tuple[str, tuple[str, str]]]:
    """The pairs of `n_rounds` rounds, in the order they run: (comparison, its pair's order).

    Each round holds one pair per comparison, in an order drawn from the seed; each
    comparison's pairs follow their own quads (schedule.pair_orders), so every comparison is an
    AB-BA crossover of adjacent blocks, as with one comparison (whose pairs are exactly
    sample_pairs' before there were several).  `every[label]` = n: that comparison has a pair in
    rounds 0, n, 2n, ... only (a live s_ref's solution: fewer blocks for a wider CI of its own)."""
    orders = {label: pair_orders(seed if c == 0 else keyed_seed(seed, "order", c), n_rounds)
              for c, label in enumerate(labels)}
    rng = np.random.default_rng(keyed_seed(seed, "rounds"))
    used = dict.fromkeys(labels, 0)
    slots = []
    for present in _round_members(n_rounds, labels, every):
        for k in rng.permutation(len(present)):
            label = present[k]
            slots.append((label, orders[label][used[label]]))
            used[label] += 1
    return slots


def _round_members(n_rounds: int, labels: tuple[str, ...], every: Mapping[str, int] | None) -> list[list[str]]:
    """The comparisons with a pair in each round."""
    every = every or {}
    if any(n < 1 for n in every.values()):
        raise ValueError(f"every must map to counts >= 1, got {dict(every)}")
    return [[label for label in labels if r % every.get(label, 1) == 0] for r in range(n_rounds)]


def sample_interleaved(baseline: Side, others: dict[str, Side], cfg: SamplerConfig, *, seed: int,
                       progress: ProgressFn | None = None, monitor: BlockMonitor | None = None,
                       clock: Clock = time.perf_counter, iters: int | None = None,
                       pair_end: PairEnd | None = None, every: Mapping[str, int] | None = None
                       ) -> dict[str, PairedSamples]:
    """AB-BA pairs of `baseline` against each of `others` (one pair each per round, in drawn
    order: `interleaved_slots`), until every comparison's CI reaches the target, or the time
    budget or max_pairs rounds is reached.  With one comparison this is `sample_pairs`; with
    `--s-ref live` the task's solution is the second, timed in the same minutes as the candidate.

    Every pair is a crossover of two adjacent blocks, each pair on fresh inputs of its own, so
    the period correction (crossover.corrected) holds for each comparison as for one: cut from
    rounds of three blocks instead, two sides' blocks were in different positions from round to
    round, and their corrected ratios formed clusters whose median one unbalanced round moved
    by 3% (tests/unit/test_live_s_ref.py).

    The scorer's own work between blocks is the same after every pair, whichever side ran
    first and whichever comparison it was: `pair_end` (the caller's deferred work), then the
    stop check (a quick order-statistic CI: microseconds; the bootstrap runs once, on the
    result; it may stop the run only after a whole round), then `progress` (with the first
    comparison's estimate).  Between the two blocks of a pair nothing runs but
    the sides themselves.  The run stops only after whole quads; max_pairs is rounded up to keep
    them balanced (to even, or with `every`, to whole quads of every comparison).

    With a `monitor`, each pair records the device conditions of its two blocks; a pair that
    ran throttled is, if cfg.remeasure_throttled, discarded and re-run after cfg.cooldown_s.
    `iters` fixes the block size (otherwise sized during the warm-up, and re-sized, the pairs so
    far discarded, if the timed pairs run blocks below half the floor: `resized_iters`).
    `every`: comparisons that run in every n-th round only (`interleaved_slots`); the stop and
    re-size checks come at round ends where every comparison's pairs make whole quads.
    """
    fixed = iters is not None
    labels = tuple(others)
    sides = {BASELINE: baseline, **others}
    step = math.lcm(*(_PAIR_STEP * (every or {}).get(label, 1) for label in labels))   # rounds of whole quads
    limit = -(-cfg.max_pairs // step) * step
    slots = interleaved_slots(seed, limit, labels, every)
    round_ends = set(itertools.accumulate(len(m) for m in _round_members(limit, labels, every)))
    iters = _warm_up_and_size([baseline, *others.values()], cfg, block_seed(seed, -1), clock, iters, pair_end)
    runs = {label: _Run() for label in labels}
    discarded = 0
    start = clock()
    stop_reason = "max_pairs"
    k = 0   # the slot (pair) to run next
    while k < len(slots):
        label, order = slots[k]
        times, seen = {}, []
        for side in order:
            if monitor is not None:
                monitor.begin()
            times[side] = sides[side if side == BASELINE else label].run_block(iters, block_seed(seed, k))
            if monitor is not None:
                seen.append(monitor.end())
        if pair_end is not None:
            pair_end()
        throttled = any(c.throttled for c in seen)
        if throttled and cfg.remeasure_throttled and discarded < cfg.max_remeasures:
            discarded += 1
            time.sleep(cfg.cooldown_s)
            continue  # same pair, same inputs, same order, again
        runs[label].add(times[BASELINE], times[CANDIDATE], order[0] == BASELINE,
                        {"blocks": [c.to_dict() for c in seen], "throttled": throttled} if seen else None)
        k += 1
        i = len(runs[labels[0]].base)   # pairs of the first comparison so far
        quads = k in round_ends and all(len(run.base) % _PAIR_STEP == 0 for run in runs.values())
        if quads and not fixed:
            fastest = [min(b, c) for run in runs.values() for b, c in zip(run.base, run.cand)]
            bigger = resized_iters(iters, fastest, cfg)
            if bigger is not None:   # the pairs so far ran blocks below the floor: start again
                iters, runs, k = bigger, {label: _Run() for label in labels}, 0
                continue
        # The same work after every pair, whichever comparison it was: done only after a round's
        # last pair, it made the first pair of a round differ from the others (a mixture that
        # the period correction cannot undo: its median moved by up to 4% in 10% effects).
        estimates = [stats.quick_ci(run.base, run.cand, run.first, cfg.confidence) if run.base else None
                     for run in runs.values()]
        if quads and i >= cfg.min_pairs:
            if all(e is not None and e.rel_half_width <= cfg.target_rel_ci for e in estimates):
                stop_reason = "ci_target"
            elif clock() - start >= cfg.time_budget_s:
                stop_reason = "time_budget"
        if progress is not None:
            progress(i, estimates[0])
        if stop_reason != "max_pairs":
            break
    return {label: PairedSamples(baseline_ns=tuple(run.base), candidate_ns=tuple(run.cand), iters_per_block=iters,
                                 stop_reason=stop_reason, conditions=tuple(run.conditions),
                                 discarded_throttled=discarded, baseline_first=tuple(run.first))
            for label, run in runs.items()}


@dataclass
class _Run:
    """One comparison's pairs so far (its candidate's times in `cand`)."""

    base: list[float] = field(default_factory=list)
    cand: list[float] = field(default_factory=list)
    first: list[bool] = field(default_factory=list)
    conditions: list[dict] = field(default_factory=list)

    def add(self, base_ns: float, cand_ns: float, baseline_first: bool, conditions: dict | None) -> None:
        self.base.append(base_ns)
        self.cand.append(cand_ns)
        self.first.append(baseline_first)
        if conditions is not None:
            self.conditions.append(conditions)
