"""Speed of light (core/sol.py): the roofline's bound, and the figures a time gives against it."""
import math

import pytest

from perfbench.core.sol import (BOUND_COMPUTE, BOUND_MEMORY, Bound, Peaks, fraction_of_sol, headroom, interval,
                                sol_score, t_sol)

PEAKS = Peaks(bandwidth_bytes_s=10e9, flop_s=100e9)


def test_the_bound_is_the_slower_of_moving_the_bytes_and_doing_the_flops():
    assert t_sol(1e9, 1e9, PEAKS) == Bound(0.1, BOUND_MEMORY)          # 0.1 s of bytes, 0.01 s of flops
    assert t_sol(1e6, 1e12, PEAKS) == Bound(10.0, BOUND_COMPUTE)        # 0.1 ms of bytes, 10 s of flops
    assert t_sol(1e9, None, PEAKS) == Bound(0.1, BOUND_MEMORY)          # no flops known: memory-only
    assert t_sol(1e9, 1e12, Peaks(10e9)) == Bound(0.1, BOUND_MEMORY)    # no FLOP/s known: memory-only


def test_sol_score_is_1_at_the_limit_half_at_the_baseline_and_clamped():
    b = Bound(1.0, BOUND_MEMORY)
    assert sol_score(1.0, 5.0, b) == 1.0 and sol_score(5.0, 5.0, b) == 0.5
    assert sol_score(3.0, 5.0, b) == pytest.approx(1 / (1 + 2 / 4))
    assert sol_score(0.5, 5.0, b) == 1.0                   # below the bound: not above 1
    assert sol_score(1e9, 5.0, b) == pytest.approx(0.0, abs=1e-8)
    assert sol_score(2.0, 0.9, b) == 0.0 and sol_score(0.5, 0.9, b) == 1.0   # a baseline under the bound


def test_fraction_headroom_and_their_intervals():
    b = Bound(2.0, BOUND_COMPUTE)
    assert fraction_of_sol(4.0, b) == 0.5 and headroom(10.0, b) == 5.0
    assert interval(lambda t: fraction_of_sol(t, b), 3.0, 5.0) == (0.4, pytest.approx(2 / 3))
    assert interval(lambda t: sol_score(t, 10.0, b), 3.0, 5.0) == (sol_score(5.0, 10.0, b), sol_score(3.0, 10.0, b))


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_peaks_and_work_must_be_positive_numbers(bad):
    with pytest.raises(ValueError, match="bandwidth"):
        Peaks(bandwidth_bytes_s=bad)
    with pytest.raises(ValueError, match="flop_s"):
        Peaks(bandwidth_bytes_s=1e9, flop_s=bad)
    with pytest.raises(ValueError, match="bytes"):
        t_sol(bad, None, PEAKS)


class _Comparison:
    """What section_of reads of a ComparisonResult."""

    def __init__(self, base_ns, cand_ns):
        from types import SimpleNamespace

        self.samples = SimpleNamespace(baseline_ns=base_ns, candidate_ns=cand_ns)
        self.solution = None
        self.summary = SimpleNamespace(speedup=SimpleNamespace(confidence=0.95))


WORK = {"bytes": 4_000_000, "flops": None}
PEAK = {"bandwidth_bytes_s": 40e9, "flop_s": None}   # t_sol 100 us


def test_a_time_beyond_twice_the_speed_of_light_is_impossible_and_says_why():
    from perfbench.core.sol import impossible_speed

    honest = _Comparison([1e6] * 20, [2e5 + 1e3 * i for i in range(20)])   # 200-219 us: half of SOL
    assert impossible_speed({"work": WORK, "peaks": PEAK}, honest) is None
    edge = _Comparison([1e6] * 20, [4.9e4 + 1e2 * i for i in range(20)])  # ~2x faster than SOL, CI reaching 2
    assert impossible_speed({"work": WORK, "peaks": PEAK}, edge) is None
    fake = _Comparison([1e6] * 20, [1e4] * 20)                              # 10 us: 10x under the bound
    why = impossible_speed({"work": WORK, "peaks": PEAK}, fake)
    assert why == ("the candidate's time per call, 10.0 us, is 10.0x or more below the least this machine allows "
                   "its work (4000000 bytes at 40.0 GB/s: 100.0 us, memory-bound)")
    assert impossible_speed({}, fake) is None   # no work or peaks: nothing to judge by


def test_the_median_ci_is_the_binomials_order_statistics_at_any_size():
    from perfbench.core.sol import median_ci

    assert median_ci(range(1, 21)) == (6, 15)          # n = 20: the 6th and 15th (a textbook table)
    assert median_ci([5, 1, 3]) == (1, 5)              # too few for 95%: the whole range
    assert median_ci(range(100)) == (39, 60)
    lo, hi = median_ci(range(5000))                    # past 1000: the normal approximation, no overflow
    assert 2400 < lo < 2500 < hi < 2600 and hi - 2499 == pytest.approx(2500 - lo, abs=2)
