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
