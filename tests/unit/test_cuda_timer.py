"""The CUDA timer's branches, on a simulated stream (perfbench/testing/fake_gpu.py): no GPU needed."""
from pathlib import Path

import pytest

from perfbench.core import tamper
from perfbench.core.errors import CandidateRejected
from perfbench.core.tamper import BlockWall
from perfbench.device.clock_probe import ClockProbeReadings, ProbedMonitor, probe_throttled
from perfbench.sides.cuda_side import _host_block_ns
from perfbench.testing.fake_gpu import FakeGpu
from perfbench.timing.cuda.timer import CudaEventTimer
from perfbench.timing.cuda.modes import choose_mode
from perfbench.timing.cuda.side_streams import activities_from_trace, outside_window

LAUNCH_NS = 20_000.0   # host launch latency the held stream must hide
KERNEL_NS = 5_000.0


def _timer(gpu, mode="events"):
    return CudaEventTimer(mode=mode, gpu=gpu)


def test_held_events_count_the_kernel_not_the_launch():
    gpu = FakeGpu(launch_ns=LAUNCH_NS)
    block = _timer(gpu).time_block(lambda x: gpu.launch(KERNEL_NS) or x, [(1,), (2,), (3,)], None)
    assert block.total_ns == pytest.approx(3 * KERNEL_NS)
    assert block.outputs == (1, 2, 3)
    assert block.mode == "events"
    assert gpu.l2_resets == 3 and gpu.window_ends == 0
    assert block.host_ns is not None and block.host_ns >= 0


def test_window_markers_only_while_profiling():
    gpu = FakeGpu()
    timer = _timer(gpu)
    with timer.marking_windows():
        timer.time_block(lambda: gpu.launch(KERNEL_NS), [(), ()], None)
    timer.time_block(lambda: gpu.launch(KERNEL_NS), [()], None)
    assert gpu.window_ends == 2 and gpu.marking is False


def test_one_slow_first_call_is_timed_again_held():
    """A first call that outlasts the hold once (a JIT compile, a lazy load) is re-timed held."""
    gpu = FakeGpu(launch_ns=LAUNCH_NS)
    calls = []

    def compiles_first():
        calls.append(1)
        gpu.launch(KERNEL_NS)
        if len(calls) == 1:
            gpu.synchronize()

    timer = _timer(gpu)
    block = timer.time_block(compiles_first, [(), ()], None)
    assert timer.fallback is None and block.mode == "events"
    assert block.total_ns == pytest.approx(2 * KERNEL_NS)
    assert len(calls) == 3


def test_unheld_events_would_count_the_launch():
    """What the hold hides: the same call timed without it reads launch latency + kernel."""
    gpu = FakeGpu(launch_ns=LAUNCH_NS)
    timer = _timer(gpu)
    timer._held = False
    block = timer.time_block(lambda: gpu.launch(KERNEL_NS), [()], None)
    assert block.total_ns == pytest.approx(LAUNCH_NS + KERNEL_NS)
    assert block.mode == "events-unheld"


def test_flush_runs_before_the_window():
    gpu = FakeGpu(launch_ns=LAUNCH_NS)
    block = _timer(gpu).time_block(lambda: gpu.launch(KERNEL_NS), [(), ()], lambda: gpu.launch(1e6))
    assert block.total_ns == pytest.approx(2 * KERNEL_NS)


def test_a_call_that_synchronises_falls_back_instead_of_hanging():
    gpu = FakeGpu(launch_ns=LAUNCH_NS, hold_timeout_s=0.5)

    def syncs():
        gpu.launch(KERNEL_NS)
        gpu.synchronize()

    timer = _timer(gpu)
    block = timer.time_block(syncs, [(), (), ()], None)
    assert timer.fallback == "candidate.synchronizes"
    assert "synchronises with the device" in timer.fallback_message
    assert block.mode == "events-unheld"
    # Each call re-timed without the hold: launch latency counted, the timeout not.
    assert block.total_ns == pytest.approx(3 * (LAUNCH_NS + KERNEL_NS))
    # Only the first call waited out the hold.
    assert len(timer.fallbacks) == 1


def test_side_stream_work_is_outside_the_events():
    """The events alone cannot see it: that is what the host clock and the profile are for."""
    gpu = FakeGpu(launch_ns=LAUNCH_NS)
    block = _timer(gpu).time_block(lambda: gpu.launch_side(500_000.0), [()], None)
    assert block.total_ns == 0.0


def test_graph_mode_subtracts_the_flush_only_graph():
    gpu = FakeGpu(launch_ns=LAUNCH_NS)
    timer = _timer(gpu, "graph")
    block = timer.time_block(lambda x: gpu.launch(KERNEL_NS) or x, [(1,), (2,), (3,), (4,)],
                             lambda: gpu.launch(30_000.0))
    assert block.mode == "graph"
    assert block.total_ns == pytest.approx(4 * KERNEL_NS)
    assert block.outputs == (1, 2, 3, 4)
    assert timer.fallback is None


def test_graph_mode_falls_back_to_events_when_the_call_cannot_be_captured():
    gpu = FakeGpu(launch_ns=LAUNCH_NS)

    def syncs():
        gpu.launch(KERNEL_NS)
        gpu.synchronize()

    timer = _timer(gpu, "graph")
    block = timer.time_block(syncs, [(), ()], None)
    assert [code for code, _ in timer.fallbacks] == ["candidate.not_capturable", "candidate.synchronizes"]
    assert block.mode == "events-unheld"
    assert block.total_ns == pytest.approx(2 * (LAUNCH_NS + KERNEL_NS))


def test_timer_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="events or graph"):
        CudaEventTimer(mode="auto", gpu=FakeGpu())


@pytest.mark.parametrize("requested,per_call,expected", [
    ("auto", 2_000.0, "graph"), ("auto", 4_999.0, "graph"), ("auto", 5_000.0, "events"),
    ("auto", 50_000.0, "events"), ("auto", None, "events"), ("events", 100.0, "events"),
    ("graph", 1e6, "graph")])
def test_choose_mode(requested, per_call, expected):
    assert choose_mode(requested, per_call) == expected


def test_choose_mode_rejects_unknown():
    with pytest.raises(ValueError, match="timing mode"):
        choose_mode("fast", 1.0)


def test_clock_probe_marks_a_slow_block_throttled():
    readings = ClockProbeReadings()
    mon = ProbedMonitor(None, readings)
    seen = []
    for mhz in (1980.0, 1950.0, 1400.0, 1990.0):
        mon.begin()
        readings.record(mhz)
        seen.append(mon.end())
    assert [c.throttled for c in seen] == [False, False, True, False]
    assert seen[2].to_dict()["probe_sm_mhz"] == 1400.0 and seen[2].to_dict()["probe_reference_mhz"] == 1980.0
    # Against a locked clock, the locked target is the reference.
    assert ProbedMonitor(None, readings, locked_mhz=1800.0).end().reference_mhz == 1800.0
    assert not probe_throttled(None, 1980.0) and not probe_throttled(1000.0, None)


def test_clock_probe_through_the_fake_timer():
    gpu = FakeGpu(clock_mhz=lambda i: [1980.0, 1000.0][i])
    timer = _timer(gpu)
    assert [timer.clock_mhz(), timer.clock_mhz()] == [1980.0, 1000.0]


def _blocks(event_us, host_us, iters=10, n=8):
    return [BlockWall(wall_ns=(host_us + 100) * 1e3 * iters, reported_ns=event_us * 1e3 * iters, iters=iters,
                      host_ns=host_us * 1e3 * iters) for _ in range(n)]


def test_gpu_unaccounted_time_flags_hidden_work_only():
    base = _blocks(10.0, 30.0)
    assert tamper.unaccounted_time_gpu(base, _blocks(5.0, 25.0), 8) is None      # honest, faster
    assert tamper.unaccounted_time_gpu(base, _blocks(5.0, 60.0), 8) is None      # longer launch path
    msg = tamper.unaccounted_time_gpu(base, _blocks(5.0, 500.0), 8)              # 475 us off the window
    assert msg is not None and "475.0 us per call" in msg
    # A long candidate call: a share of it is allowed.
    assert tamper.unaccounted_time_gpu(base, _blocks(2000.0, 2090.0), 8) is None
    # Blocks without a host clock (CPU, older workers): nothing to compare.
    assert tamper.unaccounted_time_gpu([BlockWall(1.0, 1.0, 1)] * 3, _blocks(5.0, 500.0), 8) is None


def test_host_clock_must_contain_the_events_and_fit_in_the_request():
    assert _host_block_ns("candidate", {"host_ns": 150.0}, 100.0, 200.0) == 150.0
    assert _host_block_ns("candidate", {}, 100.0, 200.0) is None
    for bad in (50.0, 250.0, float("nan"), "x"):
        with pytest.raises(CandidateRejected) as exc:
            _host_block_ns("candidate", {"host_ns": bad}, 100.0, 200.0)
        assert exc.value.reason == "tamper.impossible_time"


def _trace(*events):
    return {"traceEvents": [
        {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "args": {"stream": stream}}
        for cat, name, stream, ts, dur in events] + [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0}]}


_OURS = [("kernel", "FillFunctor", 7, 0.0, 5.0), ("kernel", "perfbench_hold", 7, 10.0, 40.0),
         ("kernel", "perfbench_window_end", 7, 80.0, 1.0)]


def test_side_stream_verdict_from_a_recorded_profile():
    honest = _trace(*_OURS, ("kernel", "softmax_kernel", 7, 51.0, 20.0))
    assert outside_window(activities_from_trace(honest)) == []
    side = _trace(*_OURS, ("kernel", "softmax_kernel", 13, 12.0, 20.0), ("gpu_memcpy", "Memcpy DtoD", 7, 55.0, 2.0))
    findings = outside_window(activities_from_trace(side))
    assert findings == ["kernel 'softmax_kernel' ran on stream 13, not on the timed stream 7"]
    late = _trace(*_OURS, ("kernel", "finish_later", 7, 95.0, 20.0))
    assert outside_window(activities_from_trace(late)) == ["kernel 'finish_later' started after the timed window ended"]
    assert outside_window(activities_from_trace(_trace(("kernel", "softmax_kernel", 7, 0.0, 1.0)))) is None
    # Unheld (after candidate.synchronizes): no hold kernel, the end marker still names the stream.
    unheld = _trace(("kernel", "softmax_kernel", 7, 51.0, 20.0), ("kernel", "perfbench_window_end", 7, 80.0, 1.0),
                    ("kernel", "other", 9, 60.0, 1.0))
    assert outside_window(activities_from_trace(unheld)) == ["kernel 'other' ran on stream 9, not on the timed stream 7"]


def test_host_clocked_blocks_compare_messaging_not_launch_overhead():
    """Held CUDA blocks: ~100 us of host time per call around a ~3 us event; a 10% difference in
    that overhead between the sides is not hidden work (seen on an H200: honest candidates were
    rejected by the CPU-era check, 43 ms per 4096-call block)."""
    base = [BlockWall(wall_ns=460e6, reported_ns=12e6, iters=4096, host_ns=450e6)] * 6
    cand = [BlockWall(wall_ns=503e6, reported_ns=10e6, iters=4096, host_ns=493e6)] * 6
    assert tamper.unaccounted_time(base, cand, 6) is not None          # the old comparison
    assert tamper.unaccounted_time(tamper.host_clocked(base), tamper.host_clocked(cand), 6) is None
    assert tamper.unaccounted_time_gpu(base, cand, 6) is None
    forged = [BlockWall(wall_ns=503e6, reported_ns=10e6, iters=4096, host_ns=300e6)] * 6   # host time under-reported
    assert tamper.unaccounted_time(tamper.host_clocked(base), tamper.host_clocked(forged), 6) is not None


def test_only_the_baseline_reports_the_clock():
    """A candidate that could report 'throttled' after its slow blocks would choose which of its
    pairs are discarded and measured again: its claimed clock is never read."""
    from perfbench.sides.build import SideSettings, build_sides
    from perfbench.task.spec import load_task

    spec = load_task(Path(__file__).parents[1] / "fixtures" / "tiny_task")
    base, make_cand, _ = build_sides(spec, None, "cuda", None, SideSettings(1.0, None, 1.0), object(), object(), 0)
    cand = make_cand()
    assert base.probe is not None and cand.probe is None
    mon = ProbedMonitor(None, base.probe)
    for side, mhz in ((base, 1980.0), (cand, 100.0), (base, 1975.0)):
        mon.begin()
        side._note_cuda_timing({"mode": "events", "clock_mhz": mhz})
        assert not mon.end().throttled
