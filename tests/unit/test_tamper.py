import math

import numpy as np

from perfbench.core import tamper
from perfbench.core.tamper import BlockWall


def _blocks(wall_ms, reported_ms, n=8, iters=100, cpu=None):
    return [BlockWall(wall_ms * 1e6, reported_ms * 1e6, iters, cpu) for _ in range(n)]


def test_unaccounted_time_flags_hidden_work_only():
    base = _blocks(13.0, 10.0)                    # 3 ms of messaging/checks per block
    assert tamper.unaccounted_time(base, _blocks(8.0, 5.0), 8) is None        # honest, faster
    assert tamper.unaccounted_time(base, _blocks(33.0, 30.0), 8) is None      # honest, slower
    msg = tamper.unaccounted_time(base, _blocks(23.0, 1.0), 8)                # 19 ms unreported
    assert msg and "ms per block" in msg
    # only the paired (last n) blocks count: warm-up blocks of another size are ignored
    assert tamper.unaccounted_time(_blocks(100.0, 1.0, n=3) + base, _blocks(8.0, 5.0), 8) is None


def test_cpu_while_baseline_ran():
    assert tamper.cpu_while_baseline_ran(_blocks(20.0, 19.0, cpu=0.0)) is None
    assert tamper.cpu_while_baseline_ran(_blocks(20.0, 19.0, cpu=None)) is None
    assert "CPU-s" in tamper.cpu_while_baseline_ran(_blocks(20.0, 19.0, cpu=0.015))
    assert tamper.cpu_while_baseline_ran(_blocks(20.0, 19.0, cpu=0.001)) is None  # tick noise


def test_baseline_slowdown_uses_fastest_paired_block():
    before = [10.0, 10.2, 9.9, 10.1, 10.0]
    assert tamper.baseline_slowdown(before, [10.1, 10.3, 9.8, 10.0, 10.2, 10.1]) is None
    assert tamper.baseline_slowdown(before, [13.0, 35.0, 12.9, 50.1, 13.0, 13.3]) is None  # swings, not sabotage
    assert "2.49x" in tamper.baseline_slowdown(before, [25.0, 25.3, 24.9, 25.1, 25.2, 25.0])
    assert tamper.baseline_slowdown(before[:2], [25.0] * 6) is None


def test_block_time_is_scorer_wall_less_overhead():
    from perfbench.sides.cpu_side import per_iteration_ns

    assert per_iteration_ns(10_000_000, 2_000_000, 100) == 80_000      # (10 ms - 2 ms) / 100 calls
    assert per_iteration_ns(10_000_000, 12_000_000, 10) == 10_000      # floor: 1% of the wall


def test_more_threads_than_the_task_allows():
    def block(wall_ms, cpu_ms):
        return BlockWall(wall_ms * 1e6, wall_ms * 1e6, 10, None, None if cpu_ms is None else cpu_ms * 1e-3)

    honest = [block(20.0, 19.5), block(20.0, 20.4), block(20.0, None)]
    assert tamper.more_threads_than_allowed(honest, threads=1) is None
    msg = tamper.more_threads_than_allowed(honest + [block(20.0, 38.0)], threads=1)
    assert msg == "the candidate used 38.0 ms of CPU in a 20.0 ms block (block 3); the task allows 1 thread"
    assert tamper.more_threads_than_allowed(honest + [block(20.0, 38.0)], threads=2) is None
    assert "2 threads" in tamper.more_threads_than_allowed([block(20.0, 60.0)], threads=2)
    # honest single-threaded blocks measured here never exceeded 1.00 CPU-s per second: the
    # allowance is 2% of a core plus 0.5 ms per block, so a 15% helper thread is caught
    assert tamper.more_threads_than_allowed([block(10.0, 10.6)], threads=1) is None
    assert "11.5 ms of CPU in a 10.0 ms block" in tamper.more_threads_than_allowed([block(10.0, 11.5)], threads=1)


def _tick_readings(rng, walls_s, threads_used, tick=0.01, user_share=0.8):
    """The CPU of each block as /proc counts it: cumulative user and system time, each cut
    down to whole ticks at every reading, with some CPU used between blocks (the stage
    requests)."""
    user = system = 0.0
    out = []

    def read():
        return (math.floor(user / tick) + math.floor(system / tick)) * tick

    for wall in walls_s:
        gap = rng.uniform(0.0, 0.004)
        user, system = user + gap * user_share, system + gap * (1 - user_share)
        before = read()
        cpu = wall * threads_used
        user, system = user + cpu * user_share, system + cpu * (1 - user_share)
        out.append(BlockWall(wall * 1e9, wall * 1e9, 1, None, read() - before))
    return out


def test_cpu_counted_in_ticks_rejects_no_honest_block_and_still_catches_a_second_thread():
    """Outside a cgroup the candidate's CPU comes from /proc in 10 ms ticks: an honest
    single-threaded 15.4 ms block read 20 ms and was rejected as tamper.threads (every honest
    score with ScoreConfig(sandbox=False) here).  Per block two ticks are allowed now; the run's
    sum still catches a second thread in every short block.  Seeded."""
    seen = [BlockWall(w * 1e6, w * 1e6, 1, None, c * 1e-3) for w, c in ((15.4, 20.0), (31.3, 40.0), (43.8, 50.0),
                                                                         (13.6, 20.0), (12.1, 20.0))]
    assert "20.0 ms of CPU in a 15.4 ms block" in tamper.more_threads_than_allowed(seen, 1)   # as before
    assert tamper.more_threads_than_allowed(seen, 1, resolution_s=0.01) is None
    # finely counted, the run is held to the limit too: 6% more than a core in every block passes
    # each block's 2% + 0.5 ms, not the run's
    creeping = [BlockWall(10e6, 10e6, 1, None, 0.0106)] * 60
    assert tamper.more_threads_than_allowed(creeping[:1], 1, resolution_s=1e-6) is None
    assert "in 60 timed blocks" in tamper.more_threads_than_allowed(creeping, 1, resolution_s=1e-6)
    two_threads = [BlockWall(15e6, 15e6, 1, None, 0.030)] * 60   # no block alone is past its two ticks
    assert tamper.more_threads_than_allowed(two_threads, 1, resolution_s=0.01) == (
        "the candidate used 1800 ms of CPU in 60 timed blocks of 900 ms; the task allows 1 thread")
    rng = np.random.default_rng(38)
    for _ in range(300):
        walls = rng.uniform(0.010, 0.050, size=60)
        assert tamper.more_threads_than_allowed(_tick_readings(rng, walls, 1.0), 1, resolution_s=0.01) is None
        assert tamper.more_threads_than_allowed(_tick_readings(rng, np.full(60, 0.015), 2.0), 1, resolution_s=0.01)
        assert tamper.more_threads_than_allowed(_tick_readings(rng, walls, 2.0), 2, resolution_s=0.01) is None


def test_check_share_grows_while_checks_are_cheap():
    from perfbench.sides.cpu_side import ArenaSide

    side = ArenaSide(None, None, None, [], 0, 1.0, check_fraction=0.3, check_budget=0.5)
    assert side.check_share(10e6) == 0.3                # no check measured yet: the configured share
    side.check_ns = [1e6, 1e6, 1e6]                     # 1 ms per check, 10 ms blocks: every block
    assert side.check_share(10e6) == 1.0
    side.check_ns = [50e6]                              # 50 ms per check: 10% of 10 ms blocks... but >= 30%
    assert side.check_share(10e6) == 0.3
    side.check_ns = [10e6]
    assert side.check_share(10e6) == 0.5
    assert ArenaSide(None, None, None, [], 0, 1.0, check_fraction=0.3, check_ns=[1.0]).check_share(10e6) == 0.3


# -- #63: exact messages and each allowance at its bound (benchmarks/mutation_score.py) -----------
def test_unaccounted_time_exactly_and_at_its_allowance():
    base = _blocks(13.0, 10.0)   # 3 ms unaccounted per block; allowance max(25% of 10 ms, 5 ms) = 5 ms
    assert tamper.unaccounted_time(base, _blocks(23.0, 15.0), 8) is None      # 8 - 3 = 5 ms: at the bound
    msg = tamper.unaccounted_time(base, _blocks(23.1, 15.0), 8)
    assert msg == "5.10 ms per block of wall time the candidate's timer did not report beyond the baseline's " \
                  "(allowed 5.00 ms)"
    long = _blocks(43.0, 40.0)   # a 40 ms baseline block: 25% of it, 10 ms, is allowed
    assert tamper.unaccounted_time(long, _blocks(30.0, 17.0), 8) is None
    assert "(allowed 10.00 ms)" in tamper.unaccounted_time(long, _blocks(30.0, 16.9), 8)
    assert tamper.unaccounted_time([], _blocks(30.0, 1.0), 8) is None
    assert tamper.unaccounted_time(base, [], 8) is None
    # medians, not means: one slow block on either side moves nothing
    assert tamper.unaccounted_time(base, _blocks(8.0, 5.0, n=7) + _blocks(500.0, 5.0, n=1), 8) is None


def test_cpu_while_baseline_ran_exactly_and_at_its_bounds():
    # 8 blocks of 20 ms: 0.16 s of wall; 5% of it is 8 ms, under the 20 ms floor: the floor holds
    assert tamper.cpu_while_baseline_ran(_blocks(20.0, 19.0, cpu=0.0025)) is None    # 20 ms in all: at the floor
    assert tamper.cpu_while_baseline_ran(_blocks(20.0, 19.0, cpu=0.0026)) == \
        "the candidate's processes used 0.02 CPU-s during 0.16 s of baseline blocks"
    # long blocks: the share holds (8 x 1 s: 0.4 s allowed)
    assert tamper.cpu_while_baseline_ran(_blocks(1000.0, 999.0, cpu=0.05)) is None
    assert tamper.cpu_while_baseline_ran(_blocks(1000.0, 999.0, cpu=0.051)) is not None
    # blocks with no reading are left out of both sums
    mixed = _blocks(1000.0, 999.0, cpu=None, n=8) + _blocks(20.0, 19.0, cpu=0.003, n=8)
    assert tamper.cpu_while_baseline_ran(mixed) is not None


def test_more_threads_than_allowed_at_each_allowance():
    def block(wall_ms, cpu_ms):
        return BlockWall(wall_ms * 1e6, wall_ms * 1e6, 10, None, cpu_ms * 1e-3)

    # per block: (threads + 2%) x wall + 0.5 ms + 2 units of resolution
    assert tamper.more_threads_than_allowed([block(100.0, 102.49)], threads=1) is None
    assert tamper.more_threads_than_allowed([block(100.0, 102.51)], threads=1) is not None
    assert tamper.more_threads_than_allowed([block(100.0, 122.49)], threads=1, resolution_s=0.01) is None
    assert tamper.more_threads_than_allowed([block(100.0, 122.51)], threads=1, resolution_s=0.01) is not None
    # the whole run, where a little over in every block adds up: 40 blocks each within their own
    # allowance in ticks, 13 ms over a single thread in each: caught over the run
    run = [block(20.0, 33.0)] * 40
    msg = tamper.more_threads_than_allowed(run, threads=1, resolution_s=0.01)
    assert msg == "the candidate used 1320 ms of CPU in 40 timed blocks of 800 ms; the task allows 1 thread"
    assert tamper.more_threads_than_allowed([block(20.0, 20.0)] * 40, threads=1, resolution_s=0.01) is None
    assert tamper.more_threads_than_allowed([BlockWall(1e6, 1e6, 1)], threads=1) is None   # nothing measured


def test_baseline_slowdown_exactly_at_its_bound():
    before = [10.0, 10.0, 10.0]
    assert tamper.baseline_slowdown(before, [20.0, 20.0, 20.0]) is None       # 2.00x: at the bound
    assert tamper.baseline_slowdown(before, [20.1, 21.0, 22.0]) == \
        "the baseline's fastest call once the candidate was loaded took 2.01x its median time alone " \
        "(A/A before vs the paired run)"
    assert tamper.baseline_slowdown(before, [25.0, 25.0]) is None              # too few paired blocks
    assert tamper.baseline_slowdown([10.0, 10.0, 1.0], [25.0] * 3) is not None   # the median alone, not the min


def test_host_clocked_takes_the_host_clock_where_there_is_one():
    with_host = BlockWall(5e6, 1e6, 10, 0.1, 0.2, host_ns=3e6)
    without = BlockWall(5e6, 1e6, 10)
    assert tamper.host_clocked([with_host, without]) == [BlockWall(5e6, 3e6, 10, 0.1, 0.2, host_ns=3e6), without]


def _gpu_blocks(event_us, host_us, iters=10):
    return [BlockWall(wall_ns=(h + 100) * 1e3 * iters, reported_ns=e * 1e3 * iters, iters=iters, host_ns=h * 1e3 * iters)
            for e, h in zip(event_us, host_us)]


def test_unaccounted_time_gpu_exactly_at_each_allowance():
    base = _gpu_blocks([10.0] * 8, [30.0] * 8)   # 20 us of host time per call beyond the events
    # 50 us per call beyond the baseline's: at the floor
    assert tamper.unaccounted_time_gpu(base, _gpu_blocks([5.0] * 8, [75.0] * 8), 8) is None
    assert tamper.unaccounted_time_gpu(base, _gpu_blocks([5.0] * 8, [75.2] * 8), 8) == (
        "50.2 us per call of host time outside the candidate's timed window beyond the baseline's "
        "(allowed 50.0 us): work on another stream or after the call returned")
    # a 2 ms call: 5% of it, 100 us
    assert tamper.unaccounted_time_gpu(base, _gpu_blocks([2000.0] * 8, [2120.0] * 8), 8) is None
    assert "(allowed 100.0 us)" in tamper.unaccounted_time_gpu(base, _gpu_blocks([2000.0] * 8, [2120.2] * 8), 8)
    # a noisy baseline: 4x the median absolute deviation of its per-call figures (here 25 us)
    noisy = _gpu_blocks([10.0] * 8, [5.0, 55.0, 5.0, 55.0, 5.0, 55.0, 5.0, 55.0])
    assert tamper.unaccounted_time_gpu(noisy, _gpu_blocks([5.0] * 8, [125.0] * 8), 8) is None
    assert "(allowed 100.0 us)" in tamper.unaccounted_time_gpu(noisy, _gpu_blocks([5.0] * 8, [125.2] * 8), 8)
    # only the last n_pairs blocks of each side, and at least two of the baseline's
    assert tamper.unaccounted_time_gpu(_gpu_blocks([10.0] * 2, [900.0] * 2) + base,
                                       _gpu_blocks([900.0] * 3, [9000.0] * 3) + _gpu_blocks([5.0] * 8, [25.0] * 8),
                                       8) is None
    assert tamper.unaccounted_time_gpu(base[:1], _gpu_blocks([5.0] * 8, [900.0] * 8), 8) is None
    assert tamper.unaccounted_time_gpu(base, [], 8) is None


def test_the_thread_checks_say_their_figures_to_a_tenth_of_a_millisecond():
    def block(wall_ms, cpu_ms):
        return BlockWall(wall_ms * 1e6, wall_ms * 1e6, 10, None, cpu_ms * 1e-3)

    assert tamper.more_threads_than_allowed([block(100.0, 102.51)], threads=1) == \
        "the candidate used 102.5 ms of CPU in a 100.0 ms block (block 0); the task allows 1 thread"
    # the run: 40 blocks of 20 ms, in ticks (10 ms): allowed 1.02 x 800 ms + 0.5 ms + 20 ms + 4 SDs of
    # the blocks' reading errors (4 x 10 ms x sqrt(40 / 3)) = 982.6 ms
    assert tamper.more_threads_than_allowed([block(20.0, 24.5)] * 40, threads=1, resolution_s=0.01) is None
    assert tamper.more_threads_than_allowed([block(20.0, 24.6)] * 40, threads=1, resolution_s=0.01) == \
        "the candidate used 984 ms of CPU in 40 timed blocks of 800 ms; the task allows 1 thread"
    assert tamper.more_threads_than_allowed([block(20.0, 47.0)] * 40, threads=2, resolution_s=0.01) == \
        "the candidate used 1880 ms of CPU in 40 timed blocks of 800 ms; the task allows 2 threads"


def test_the_gpu_check_needs_two_baseline_blocks():
    two = _gpu_blocks([10.0] * 2, [30.0] * 2)
    assert tamper.unaccounted_time_gpu(two, _gpu_blocks([5.0] * 8, [900.0] * 8), 8) is not None


def test_each_cpu_check_allows_exactly_its_bound():
    """CPU equal to the allowance, computed as the check computes it, passes; (measured CPU is a
    float that can land on it)."""
    wall_ns = 20e6
    limit = (1 + tamper.THREADS_SLACK) * (wall_ns * 1e-9) + tamper.THREADS_FLOOR_S
    assert tamper.more_threads_than_allowed([BlockWall(wall_ns, wall_ns, 10, None, limit)], threads=1) is None
    blocks = [BlockWall(wall_ns, wall_ns, 10, 0.0)] * 7 + [BlockWall(1e9, 1e9, 10, 0.0)]
    share = tamper.IDLE_CPU_SHARE * sum(b.wall_ns * 1e-9 for b in blocks)   # 0.057 s: above the 20 ms floor
    at = blocks[:-1] + [BlockWall(1e9, 1e9, 10, share)]
    assert tamper.cpu_while_baseline_ran(at) is None
