"""Tamper checks the scorer computes from what it observed itself (pure; no I/O).

- unaccounted time: per timed block the scorer knows the wall time of the request and the time
  the worker reported.  Work hidden from the timer (finished by a thread after the call
  returned, deferred into the output transfer, ...) shows up as wall time the report does not
  contain.  Both workers pay the same input generation and messaging, so the candidate's
  unaccounted time per iteration is compared with the baseline's.
- baseline interference: the baseline's time per iteration before the candidate was loaded
  (A/A blocks) against its time during the paired run, and the CPU the candidate's session
  burned while the baseline's blocks ran.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Sequence

# A candidate may leave this much more unaccounted time per block than the baseline before it
# is called tampering: a share of the baseline's block time, or an allowance for jitter in
# messaging and the post-call checks (a /proc scan: ~2-4 ms here, noisy), whichever is larger.
# Measured on a 2-core VM: honest candidates reached 2.5 ms over the baseline.
UNACCOUNTED_SHARE = 0.25
UNACCOUNTED_PER_BLOCK_NS = 5_000_000.0
# Baseline slower while the candidate is resident by more than this: sabotage.  A backstop
# only (the CPU-time check is the precise one): on a noisy 2-core VM the median baseline of an
# honest run was seen 1.41x slower during the paired run than alone.
INTERFERENCE_RATIO = 2.0
# CPU the candidate's session may use while a baseline block runs: an idle worker blocks in
# recv and used 0.00 CPU-s in every honest run measured; a saboteur starved by other load on a
# 2-core VM was seen using only ~10%.
IDLE_CPU_SHARE = 0.05
IDLE_CPU_FLOOR_S = 0.02
# CPU a side may use in a timed block beyond the task's thread count: a share of the block and a
# floor for accounting granularity.  Honest single-threaded workers measured here (3 shipped
# tasks, 5 honest candidates) never exceeded 1.00 CPU-s per second (the scorer's messaging is in
# the wall, not in the worker's CPU); a second core used in one call in four reads ~1.15.
THREADS_SLACK = 0.02
THREADS_FLOOR_S = 0.0005
RUN_RESOLUTION_SDS = 4.0   # the run's summed reading errors may exceed the limit by this many SDs
# CUDA, per call: the worker's host clock of a held call bounded by a device-wide synchronize
# holds the call's enqueue, the synchronize latency and its device time; the events hold only
# the device time on the timed stream.  Work outside that window (another stream, launched after
# the end event) is host time the events lack.  Allowed beyond the baseline's: a share of the
# candidate's own event time, 4x the spread of the baseline's, or a longer Python launch path
# (an honest Triton candidate's launcher costs ~10-30 us more per call than one torch op),
# whichever is largest.  The per-call allowance is why this is the backstop, and the profiled
# gate call (tamper.side_stream) the precise check.
GPU_UNACCOUNTED_SHARE = 0.05
GPU_UNACCOUNTED_PER_CALL_NS = 50_000.0


@dataclass(frozen=True)
class BlockWall:
    """What the scorer saw of one block: wall time of the request vs the time reported."""

    wall_ns: float
    reported_ns: float
    iters: int
    other_cpu_s: float | None = None   # CPU burned by the *other* worker's session meanwhile
    own_cpu_s: float | None = None     # CPU this side's processes used during the block
    host_ns: float | None = None       # CUDA: the worker's synchronize-bounded host clock of the block


def unaccounted_time(base: Sequence[BlockWall], cand: Sequence[BlockWall], n_pairs: int) -> str | None:
    """A message if the candidate's blocks hold implausibly more unreported wall time.

    Compares the last `n_pairs` blocks of each side (the paired run: same iteration count) by
    their unaccounted time per block.
    """
    b_blocks, c_blocks = list(base)[-n_pairs:], list(cand)[-n_pairs:]
    if not b_blocks or not c_blocks:
        return None
    b = statistics.median(x.wall_ns - x.reported_ns for x in b_blocks)
    c = statistics.median(x.wall_ns - x.reported_ns for x in c_blocks)
    base_block = statistics.median(x.reported_ns for x in b_blocks)
    allowed = max(UNACCOUNTED_SHARE * base_block, UNACCOUNTED_PER_BLOCK_NS)
    if c - b > allowed:
        return (f"{(c - b) / 1e6:.2f} ms per block of wall time the candidate's timer did not report "
                f"beyond the baseline's (allowed {allowed / 1e6:.2f} ms)")
    return None


def host_clocked(blocks: Sequence[BlockWall]) -> list[BlockWall]:
    """CUDA blocks with the worker's host clock as what was 'reported': the scorer's wall time
    beyond it is messaging and the worker's own checks, comparable across sides as on the CPU.
    (The events are far shorter than a held block's host time, so wall - events would compare
    the sides' launch overheads, not hidden work: that is unaccounted_time_gpu's job.)"""
    return [replace(b, reported_ns=b.host_ns) if b.host_ns is not None else b for b in blocks]


def unaccounted_time_gpu(base: Sequence[BlockWall], cand: Sequence[BlockWall], n_pairs: int) -> str | None:
    """A message if the candidate's calls hold more host time beyond their event time than the
    baseline's do (CUDA blocks that carry the worker's host clock)."""
    b_blocks = [x for x in list(base)[-n_pairs:] if x.host_ns is not None]
    c_blocks = [x for x in list(cand)[-n_pairs:] if x.host_ns is not None]
    if len(b_blocks) < 2 or not c_blocks:
        return None
    b = [(x.host_ns - x.reported_ns) / x.iters for x in b_blocks]
    c = [(x.host_ns - x.reported_ns) / x.iters for x in c_blocks]
    spread = statistics.median(abs(v - statistics.median(b)) for v in b)
    cand_call = statistics.median(x.reported_ns / x.iters for x in c_blocks)
    allowed = max(GPU_UNACCOUNTED_SHARE * cand_call, 4 * spread, GPU_UNACCOUNTED_PER_CALL_NS)
    extra = statistics.median(c) - statistics.median(b)
    if extra > allowed:
        return (f"{extra / 1e3:.1f} us per call of host time outside the candidate's timed window beyond the "
                f"baseline's (allowed {allowed / 1e3:.1f} us): work on another stream or after the call returned")
    return None


def cpu_while_baseline_ran(base: Sequence[BlockWall]) -> str | None:
    """A message if the candidate's processes used CPU while the baseline was being timed."""
    used = [(x.other_cpu_s, x.wall_ns * 1e-9) for x in base if x.other_cpu_s is not None]
    if not used:
        return None
    cpu = sum(u for u, _ in used)
    wall = sum(w for _, w in used)
    if cpu > IDLE_CPU_SHARE * wall and cpu > IDLE_CPU_FLOOR_S:
        return f"the candidate's processes used {cpu:.2f} CPU-s during {wall:.2f} s of baseline blocks"
    return None


def more_threads_than_allowed(blocks: Sequence[BlockWall], threads: int, resolution_s: float = 0.0) -> str | None:
    """A message if a side's processes used more CPU in one of its timed blocks than `threads`
    threads can: the task fixes the thread count for both sides, and extra cores are a speedup
    the baseline was not given.  Per block, so extra threads in a few blocks are caught too.

    `resolution_s`: the unit the CPU was counted in (a cgroup's microseconds, the processes' CPU
    clocks' nanoseconds, or, where neither can be read, procfs.TICK_S: 10 ms).  A block's CPU
    is the difference of two readings, each up to two units low, so it may read two units above
    the truth: in ticks, an honest 15 ms block read 20 ms, and was rejected while that went
    unallowed.  Each block is allowed those two units; the whole run,
    whose blocks' reading errors mostly cancel, is held to the limit as well (with
    RUN_RESOLUTION_SDS standard deviations of their sum), so that a second thread in every
    short block is still caught."""
    measured = [(i, x) for i, x in enumerate(blocks) if x.own_cpu_s is not None]
    for i, x in measured:
        wall_s = x.wall_ns * 1e-9
        if x.own_cpu_s > (threads + THREADS_SLACK) * wall_s + THREADS_FLOOR_S + 2 * resolution_s:
            return (f"the candidate used {x.own_cpu_s * 1e3:.1f} ms of CPU in a {wall_s * 1e3:.1f} ms block "
                    f"(block {i}); the task allows {threads} thread{'s' if threads != 1 else ''}")
    if measured:
        cpu_s = sum(x.own_cpu_s for _, x in measured)
        wall_s = sum(x.wall_ns for _, x in measured) * 1e-9
        # each block's error: two readings' two truncations, uniform over a unit: SD unit/sqrt(3)
        spread = RUN_RESOLUTION_SDS * resolution_s * math.sqrt(len(measured) / 3)
        if cpu_s > (threads + THREADS_SLACK) * wall_s + THREADS_FLOOR_S + 2 * resolution_s + spread:
            return (f"the candidate used {cpu_s * 1e3:.0f} ms of CPU in {len(measured)} timed blocks of "
                    f"{wall_s * 1e3:.0f} ms; the task allows {threads} thread{'s' if threads != 1 else ''}")
    return None


def baseline_slowdown(before_ns: Sequence[float], during_ns: Sequence[float]) -> str | None:
    """A message if even the baseline's fastest paired block is far slower than it ran alone.

    The fastest block, not the median: baselines that allocate large temporaries swing 3x
    between blocks on their own (page faults), while a resident saboteur slows every block.
    """
    if len(before_ns) < 3 or len(during_ns) < 3:
        return None
    ratio = min(during_ns) / statistics.median(before_ns)
    if ratio > INTERFERENCE_RATIO:
        return (f"the baseline's fastest call once the candidate was loaded took {ratio:.2f}x its "
                f"median time alone (A/A before vs the paired run)")
    return None
