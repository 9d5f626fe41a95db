from perfbench import tamper
from perfbench.tamper import BlockWall


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
    from perfbench.pipeline.arena_side import per_iteration_ns

    assert per_iteration_ns(10_000_000, 2_000_000, 100) == 80_000      # (10 ms - 2 ms) / 100 calls
    assert per_iteration_ns(10_000_000, 12_000_000, 10) == 10_000      # floor: 1% of the wall
