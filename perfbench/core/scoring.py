"""Rewards and task validity gates.  Pure: no I/O, no torch.

R_perf (the protocol's performance reward)::

    R_perf(s, s_ref) = 0                                   if s <= s_ref
                     = min(1, ln(s / s_ref) / ln(s_ref))   otherwise

so a candidate that merely matches the task's reference solution (s == s_ref) earns 0 and one
that beats the baseline by s_ref**2 or more earns 1.  `s_ref` is the reference solution's
speedup over the baseline on this hardware and must exceed 1 (a task whose solution is not
faster than its baseline cannot define the scale).

R_impl (implementation tasks) is 1 iff every test passes; the passed fraction is reported beside
it, never blended into it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .stats import Stability

# A task's reference solution must beat its baseline by at least this much to be a valid task.
MIN_S_REF = 1.15
# How far noise (between worker processes, or an A/A floor) may move R_perf before a task is
# not valid on a device (validate's solution_stable; calibration plans' max_noise_r default).
MAX_NOISE_R = 0.1
# Implementation tasks need at least this many tests.
MIN_IMPL_TESTS = 5


def _check_positive_finite(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")


def r_perf(s: float, s_ref: float) -> float:
    """Performance reward for speedup `s` on a task whose reference solution reaches `s_ref`."""
    _check_positive_finite("s", s)
    _check_positive_finite("s_ref", s_ref)
    if s_ref <= 1.0:
        raise ValueError(f"s_ref must be > 1 (the reference solution must beat the baseline), got {s_ref}")
    if s <= s_ref:
        return 0.0
    return min(1.0, math.log(s / s_ref) / math.log(s_ref))


def r_impl(passed: int, total: int) -> float:
    """1.0 iff all `total` tests passed, else 0.0."""
    if total <= 0:
        raise ValueError(f"an implementation task needs tests, got total={total}")
    if not 0 <= passed <= total:
        raise ValueError(f"passed must be in [0, {total}], got {passed}")
    return 1.0 if passed == total else 0.0


@dataclass(frozen=True)
class GateResult:
    """One validity gate: its name, whether it held, and the measured evidence."""

    name: str
    ok: bool
    detail: str


def unreachable_reward(s_ref: float, headroom: float) -> str | None:
    """A warning when R_perf = 1 needs a speedup (s_ref^2) above what physics allows over the
    baseline (`headroom` = t_baseline / t_sol, core/sol.py), or None."""
    if s_ref ** 2 <= headroom:
        return None
    return (f"R_perf = 1 needs a speedup of s_ref^2 = {s_ref ** 2:.2f}, but the baseline is only {headroom:.2f}x "
            "its speed-of-light time here: a reward of 1 is physically out of reach on this machine")


def gate_s_ref(s_ref: float, ci_low: float) -> GateResult:
    """The reference solution must beat the baseline by MIN_S_REF, stably (CI low end too)."""
    ok = s_ref >= MIN_S_REF and ci_low >= MIN_S_REF
    return GateResult("solution_speedup", ok,
                      f"s_ref={s_ref:.3f} (CI low {ci_low:.3f}); needs >= {MIN_S_REF}")


def gate_stable(stability: Stability | None, s: float) -> GateResult:
    """The solution's speedup must not depend on which worker process measured it by more than
    MAX_NOISE_R of R_perf at its own speedup `s` (the between-process spread carried into R:
    ln(spread) / ln(s)).

    Not "the spread is within a process's own CI" (stats.Stability.unstable, still a warning on
    every score): that compares two noise terms, and on a host whose processes differ by 3% in
    memory layout it fails a long, precise run of a task that is perfectly usable."""
    if stability is None:
        return GateResult("solution_stable", True, "one worker process: no between-process check")
    moves_r = math.log(stability.spread) / math.log(s) if s > 1 else math.inf
    ok = moves_r <= MAX_NOISE_R
    return GateResult("solution_stable", ok,
                      f"worker processes' speedups spread {100 * (stability.spread - 1):.1f}% (a process's own "
                      f"CI {100 * (stability.within_width - 1):.1f}% wide): moves R_perf by up to {moves_r:.2f} at "
                      f"s {s:.2f}; needs <= {MAX_NOISE_R:g}"
                      + ("" if ok else " (unstable: raise [timing] pairs, [cpu] threads = 1, or a quieter host)"))


def gate_starter_not_faster(s_starter: float, ci_low: float, s_solution: float | None = None) -> GateResult:
    """The starter must not beat the baseline: its speedup's CI must not lie above 1 by more than
    MAX_NOISE_R of R_perf at the solution's speedup (ln(ci_low) / ln(s_solution)).

    A starter that is the baseline's program reads 1.01-1.02 with a CI above 1 when its worker
    processes happen to be laid out a little better: noise, not a head start.  Without the
    solution's speedup, the CI's low end must be <= 1."""
    if ci_low <= 1.0 or s_solution is None or s_solution <= 1.0:
        ok = ci_low <= 1.0
        return GateResult("starter_not_faster", ok,
                          f"starter speedup {s_starter:.3f} (CI low {ci_low:.3f}); needs CI low <= 1")
    ahead = math.log(ci_low) / math.log(s_solution)
    ok = ahead <= MAX_NOISE_R
    return GateResult("starter_not_faster", ok,
                      f"starter speedup {s_starter:.3f} (CI low {ci_low:.3f}): ahead of the baseline by up to "
                      f"{ahead:.2f} of R_perf at s {s_solution:.2f}; needs <= {MAX_NOISE_R:g}")


def gate_impl_tests(n_tests: int, solution_passed: int, starter_passed: int) -> list[GateResult]:
    """Implementation-task gates: enough tests, solution passes all, starter fails one."""
    return [
        GateResult("enough_tests", n_tests >= MIN_IMPL_TESTS, f"{n_tests} tests; needs >= {MIN_IMPL_TESTS}"),
        GateResult("solution_passes_all", solution_passed == n_tests,
                   f"solution passed {solution_passed}/{n_tests}"),
        GateResult("starter_fails_one", starter_passed < n_tests,
                   f"starter passed {starter_passed}/{n_tests}"),
    ]
