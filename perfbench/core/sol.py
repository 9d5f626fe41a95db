"""Speed of light: the least time the machine allows one call, and how far a measured time is
from it.  Pure: the work (bytes, flops) and the peaks come in, figures go out.

- `t_sol` = max(bytes / bandwidth, flops / flop_rate): the roofline's bound at this work, and
  which of the two bounds it (`memory` or `compute`; memory-only where no flops are known).
- `fraction_of_sol` = t_sol / t: 1 at the limit.
- `sol_score` = 1 / (1 + (t_k - t_sol) / (t_b - t_sol)), SOL-ExecBench's formula: 1 at the
  limit, 0.5 at the baseline's time, clamped to [0, 1] here (a time below t_sol, or a baseline at
  it, is not a score to extrapolate).
- `headroom` = t_baseline / t_sol: the largest speedup over the baseline physics allows.

A time's CI maps through each figure monotonically, so each figure's CI is the figure at the
time's CI bounds (in the order that keeps low <= high).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass

BOUND_MEMORY, BOUND_COMPUTE = "memory", "compute"
EXACT_MEDIAN_CI_MAX_N = 1000   # median_ci sums the binomial exactly up to this many values


@dataclass(frozen=True)
class Peaks:
    """The machine's rates the bound uses: bytes/s of the memory level the data comes from, and
    FLOP/s of the dtype the work runs in (None: unknown, the bound is memory-only)."""

    bandwidth_bytes_s: float
    flop_s: float | None = None
    source: str = ""   # where they came from (measured now, bench_configs' [peaks], ...)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.bandwidth_bytes_s) and self.bandwidth_bytes_s > 0):
            raise ValueError(f"bandwidth must be a positive number of bytes/s, got {self.bandwidth_bytes_s!r}")
        if self.flop_s is not None and not (math.isfinite(self.flop_s) and self.flop_s > 0):
            raise ValueError(f"flop_s must be a positive number or None, got {self.flop_s!r}")


@dataclass(frozen=True)
class Bound:
    t_sol_s: float
    bound: str         # BOUND_MEMORY or BOUND_COMPUTE

    def to_dict(self) -> dict:
        return asdict(self)


def t_sol(bytes_moved: float, flops: float | None, peaks: Peaks) -> Bound:
    """The least time one call can take: its bytes at the bandwidth, its flops at the FLOP/s."""
    if not (math.isfinite(bytes_moved) and bytes_moved > 0):
        raise ValueError(f"bytes must be a positive number, got {bytes_moved!r}")
    memory = bytes_moved / peaks.bandwidth_bytes_s
    compute = flops / peaks.flop_s if flops and peaks.flop_s else 0.0
    return Bound(compute, BOUND_COMPUTE) if compute > memory else Bound(memory, BOUND_MEMORY)


def fraction_of_sol(t_s: float, bound: Bound) -> float:
    """t_sol / t: 1 at the limit; above 1 for a time the bound says cannot be."""
    return bound.t_sol_s / t_s


def sol_score(t_kernel_s: float, t_baseline_s: float, bound: Bound) -> float:
    """SOL-ExecBench's 1 / (1 + (t_k - t_sol) / (t_b - t_sol)), clamped to [0, 1]: 1 at the limit,
    0.5 at the baseline's time, towards 0 as the kernel slows."""
    over_baseline = t_baseline_s - bound.t_sol_s
    if over_baseline <= 0:   # the baseline at (or under) the bound: nothing left to score against
        return 1.0 if t_kernel_s <= t_baseline_s else 0.0
    score = 1.0 / (1.0 + (t_kernel_s - bound.t_sol_s) / over_baseline)
    return min(1.0, max(0.0, score))


def headroom(t_baseline_s: float, bound: Bound) -> float:
    """t_baseline / t_sol: the largest speedup over the baseline that physics allows."""
    return t_baseline_s / bound.t_sol_s


def interval(figure, low_t: float, high_t: float) -> tuple[float, float]:
    """A figure's CI from a time's CI (the figure is monotone in the time)."""
    a, b = figure(low_t), figure(high_t)
    return (a, b) if a <= b else (b, a)


def median_ci(values, confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free CI of a sample's median: the order statistics the binomial(n, 1/2)
    puts `confidence` between (the whole range for very small samples)."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    tail = (1.0 - confidence) / 2.0
    if n > EXACT_MEDIAN_CI_MAX_N:   # the binomial's normal approximation
        z = statistics.NormalDist().inv_cdf(1.0 - tail)
        k = max(0, math.floor(n / 2.0 - z * math.sqrt(n) / 2.0))
        return xs[max(k - 1, 0)], xs[min(n - k, n - 1)]
    cdf, k = 0.0, 0
    while k < n:   # the largest k with P(Binomial(n, 1/2) <= k - 1) <= tail
        step = math.comb(n, k) / (1 << n)   # (exact integers: 2.0 ** n overflows past n = 1023)
        if cdf + step > tail:
            break
        cdf += step
        k += 1
    return xs[max(k - 1, 0)], xs[min(n - k, n - 1)]


def _seconds(times_ns, confidence: float) -> tuple[float, float, float]:
    """A side's median time per call and that median's CI, in seconds."""
    lo, hi = median_ci(times_ns, confidence)
    return statistics.median(times_ns) * 1e-9, lo * 1e-9, hi * 1e-9


def _side(times: tuple[float, float, float], bound: Bound) -> dict:
    t, lo, hi = times
    return {"median_ns": t * 1e9, "fraction_of_sol": fraction_of_sol(t, bound),
            "fraction_ci": list(interval(lambda x: fraction_of_sol(x, bound), lo, hi))}


def section_of(inputs: dict, comparison) -> dict | None:
    """`section` for a comparison (core/results.ComparisonResult) from {"work", "peaks"}; None
    where either is missing."""
    if not inputs or comparison is None:
        return None
    c = comparison
    return section(inputs["work"], inputs["peaks"], c.samples.baseline_ns, c.samples.candidate_ns,
                   c.solution.candidate_ns if c.solution else None, c.summary.speedup.confidence)


def section(work: dict, peaks: dict, baseline_ns, candidate_ns, solution_ns=None,
            confidence: float = 0.95) -> dict:
    """A verdict's `sol`, from what was measured: the call's work, the peaks, each side's times
    per call (ns).  Recomputed from these wherever the verdict is read."""
    bound = t_sol(work["bytes"], work.get("flops"), Peaks(peaks["bandwidth_bytes_s"], peaks.get("flop_s")))
    base, cand_t = _seconds(baseline_ns, confidence), _seconds(candidate_ns, confidence)
    t_k, lo, hi = cand_t
    cand = _side(cand_t, bound)
    cand.update(sol_score=sol_score(t_k, base[0], bound),
                sol_score_ci=list(interval(lambda x: sol_score(x, base[0], bound), lo, hi)))
    return {"work": dict(work), "peaks": dict(peaks), "t_sol_ns": bound.t_sol_s * 1e9, "bound": bound.bound,
            "headroom": headroom(base[0], bound), "baseline": _side(base, bound), "candidate": cand,
            "solution": _side(_seconds(solution_ns, confidence), bound) if solution_ns else None}


# A time is impossible when even the slow end of its CI is this many times faster than the
# speed-of-light bound.  An honest kernel can reach the bound (a matmul that is the routine the
# GEMM probe times reads 100% of it, give or take the probe's noise), and the bound's rates move
# with the host's load between measurements; twice the bound is past both
# (benchmarks/results/speed_of_light.md, "The physics gate's factor").
IMPOSSIBLE_FACTOR = 2.0


def impossible_speed(inputs: dict, comparison, factor: float = IMPOSSIBLE_FACTOR) -> str | None:
    """Why the candidate's time cannot be this machine's (the verdict's `tamper.impossible_speed`),
    or None: the low end of its fraction-of-SOL CI above `factor`."""
    s = section_of(inputs, comparison)
    if s is None:
        return None
    low = s["candidate"]["fraction_ci"][0]
    if low <= factor:
        return None
    p, w = s["peaks"], s["work"]
    rates = f"{p['bandwidth_bytes_s'] / 1e9:.1f} GB/s" + (f" and {p['flop_s'] / 1e9:.1f} GFLOP/s" if p.get("flop_s") else "")
    return (f"the candidate's time per call, {s['candidate']['median_ns'] / 1e3:.1f} us, is {low:.1f}x or more below "
            f"the least this machine allows its work ({w['bytes']} bytes" + (f", {w['flops']} flops" if w.get("flops")
                                                                           else "")
            + f" at {rates}: {s['t_sol_ns'] / 1e3:.1f} us, {s['bound']}-bound)")
