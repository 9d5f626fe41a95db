"""The AB-BA sampler driven by FakeTimer: exact, seeded, no real timing."""
import numpy as np
import pytest

import perfbench
from perfbench.core import stats
from perfbench.core.results import PairedSamples
from perfbench.timing.inprocess import InProcessSide
from perfbench.timing.sampler import SamplerConfig, sample_pairs, warm_iters
from perfbench.timing.schedule import pair_orders
from perfbench.testing.timers import FakeKernel, FakeTimer, linear_drift, step_drift

FAST = SamplerConfig(min_pairs=10, max_pairs=40, warmup_s=0.0, min_block_s=0.001, target_rel_ci=0.0)


def _compare(timer, base_ns=1e6, cand_ns=1e6, cfg=FAST, seed=7):
    return perfbench.compare(FakeKernel("A", base_ns), FakeKernel("B", cand_ns), lambda s: (),
                             timer=timer, config=cfg, seed=seed)


def test_every_quad_is_abba_or_baab_drawn_from_the_seed():
    orders = pair_orders(5, 40)
    quads = {tuple(orders[q:q + 2]) for q in range(0, 40, 2)}
    assert quads == {(("baseline", "candidate"), ("candidate", "baseline")),
                     (("candidate", "baseline"), ("baseline", "candidate"))}
    assert pair_orders(5, 40) == orders and pair_orders(6, 40) != orders
    assert pair_orders(5, 7) == orders[:7]


def test_sampler_runs_the_drawn_order():
    timer = FakeTimer()
    r = _compare(timer, cfg=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.0, min_block_s=0.0))
    assert r.samples.iters_per_block == 1
    assert r.samples.n_pairs == 6
    # after the warm-up/sizing blocks (A then B, twice: a size is not chosen on its first
    # block), each pair in the order drawn from the seed, and recorded
    assert timer.calls[:4] == ["A", "B", "A", "B"]
    drawn = pair_orders(7, 6)
    assert timer.calls[4:] == ["A" if side == "baseline" else "B" for pair in drawn for side in pair]
    assert r.samples.baseline_first == tuple(pair[0] == "baseline" for pair in drawn)


def test_block_sized_above_resolution():
    r = _compare(FakeTimer(), base_ns=10_000, cand_ns=20_000,
                 cfg=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.0, min_block_s=0.001))
    assert r.samples.iters_per_block * 10_000 >= 1e6


def test_ten_percent_slowdown_detected():
    r = _compare(FakeTimer(noise=0.02, seed=1), base_ns=1e6, cand_ns=1.1e6)
    assert r.speedup == pytest.approx(1 / 1.1, rel=0.01)
    assert r.p_value < 0.01
    assert r.ci[1] < 1.0


def test_aa_not_significant():
    r = _compare(FakeTimer(noise=0.02, seed=2))
    assert r.p_value > 0.05
    assert r.ci[0] < 1.0 < r.ci[1]


def test_adaptive_stop_on_ci_target():
    cfg = SamplerConfig(min_pairs=6, max_pairs=200, warmup_s=0.0, target_rel_ci=0.01)
    r = _compare(FakeTimer(noise=0.01, seed=3), cfg=cfg)
    assert r.samples.stop_reason == "ci_target"
    assert r.samples.n_pairs < 200 and r.samples.n_pairs % 2 == 0


@pytest.mark.parametrize("min_pairs", [5, 7, 9])
def test_stop_is_balanced_even_when_target_met_at_odd_count(min_pairs):
    """Noise-free: the CI is zero-width from the first pair, so the target is met at once.  The
    run must still end on an even count (as many AB as BA pairs), i.e. at min_pairs + 1."""
    cfg = SamplerConfig(min_pairs=min_pairs, max_pairs=200, warmup_s=0.0, min_block_s=0.0, target_rel_ci=0.5)
    r = _compare(FakeTimer(), cfg=cfg)
    assert r.samples.stop_reason == "ci_target"
    assert r.samples.n_pairs == min_pairs + 1


def test_time_budget_stop_is_balanced_at_odd_min_pairs():
    cfg = SamplerConfig(min_pairs=7, max_pairs=10_000, warmup_s=0.0, target_rel_ci=0.0, time_budget_s=0.0)
    r = _compare(FakeTimer(noise=0.05, seed=3), cfg=cfg)
    assert (r.samples.stop_reason, r.samples.n_pairs) == ("time_budget", 8)


class RecordingSide:
    """A fake Side that records the seed of every block it is asked to run."""

    def __init__(self):
        self.seeds: list[int] = []

    def run_block(self, iters, seed):
        self.seeds.append(seed)
        return 1000.0


def test_both_sides_of_a_pair_see_the_same_inputs_and_pairs_differ():
    from perfbench.timing.sampler import sample_pairs

    base, cand = RecordingSide(), RecordingSide()
    cfg = SamplerConfig(min_pairs=8, max_pairs=8, warmup_s=0.0, min_block_s=0.0)
    s = sample_pairs(base, cand, cfg, seed=11, clock=lambda: 0.0)
    assert s.n_pairs == 8
    warm = len(base.seeds) - 8           # the sizing blocks come first, also paired
    assert warm >= 1 and base.seeds == cand.seeds
    paired = base.seeds[warm:]
    assert len(set(paired)) == 8         # a fresh input set per pair
    assert not set(paired) & set(base.seeds[:warm])   # warm-up inputs are never the timed ones
    # a different master seed gives different inputs
    other = RecordingSide()
    sample_pairs(other, RecordingSide(), cfg, seed=12, clock=lambda: 0.0)
    assert not set(other.seeds) & set(base.seeds)


def test_fake_runs_are_deterministic_whatever_the_wall_clock():
    """Warm-up and budgets run on FakeTimer's simulated clock: two runs give identical samples."""
    cfg = SamplerConfig(min_pairs=6, max_pairs=40, warmup_s=0.05, min_block_s=0.001, time_budget_s=0.2)
    a = _compare(FakeTimer(noise=0.03, seed=9), cfg=cfg)
    import time
    time.sleep(0.06)   # would change the number of warm-up blocks if they ran on the host clock
    b = _compare(FakeTimer(noise=0.03, seed=9), cfg=cfg)
    assert a.samples == b.samples


def test_time_budget_stops():
    cfg = SamplerConfig(min_pairs=6, max_pairs=10_000, warmup_s=0.0, target_rel_ci=0.0, time_budget_s=0.0)
    r = _compare(FakeTimer(noise=0.05, seed=3), cfg=cfg)
    assert r.samples.stop_reason == "time_budget"
    assert r.samples.n_pairs == 6


def _sequential_speedup(timer, base, cand, n):
    """do_bench-style: all A, then all B, ratio of medians."""
    a = [timer.time_block(base, [()], None).total_ns for _ in range(n)]
    b = [timer.time_block(cand, [()], None).total_ns for _ in range(n)]
    return float(np.median(a) / np.median(b))


@pytest.mark.parametrize("drift", [step_drift(at_s=0.02, factor=1.3), linear_drift(rate_per_s=10.0)],
                         ids=["step", "linear"])
def test_abba_beats_sequential_under_drift(drift):
    true_s = 1.0 / 1.05
    base, cand = FakeKernel("A", 1e6), FakeKernel("B", 1.05e6)
    n = 20
    cfg = SamplerConfig(min_pairs=n, max_pairs=n, warmup_s=0.0, min_block_s=0.0)
    r = perfbench.compare(base, cand, lambda s: (), timer=FakeTimer(noise=0.005, drift=drift, seed=4),
                          config=cfg, seed=1)
    seq = _sequential_speedup(FakeTimer(noise=0.005, drift=drift, seed=4), base, cand, n)
    abba_err = abs(np.log(r.speedup / true_s))
    seq_err = abs(np.log(seq / true_s))
    assert abba_err < seq_err / 5, (abba_err, seq_err)


def test_config_validation():
    with pytest.raises(ValueError, match="min_pairs"):
        SamplerConfig(min_pairs=4)
    with pytest.raises(ValueError, match="max_pairs"):
        SamplerConfig(min_pairs=10, max_pairs=8)
    with pytest.raises(ValueError, match="cache_flush"):
        SamplerConfig(cache_flush="maybe")


def test_result_round_trip_and_schema():
    r = _compare(FakeTimer(noise=0.02, seed=5))
    d = r.to_dict()
    back = perfbench.ComparisonResult.from_dict(d)
    assert back == r
    assert back.summary == r.summary
    assert d["schema_version"] == perfbench.SCHEMA_VERSION
    assert d["seed"] == 7 and len(d["samples"]["baseline_ns"]) == r.samples.n_pairs
    d["schema_version"] = 999
    with pytest.raises(ValueError, match="schema_version"):
        perfbench.ComparisonResult.from_dict(d)
    # derived summary in the JSON is ignored: tampering with it changes nothing
    d2 = r.to_dict()
    d2["summary"]["speedup"] = 100.0
    assert perfbench.ComparisonResult.from_dict(d2).speedup == r.speedup
    # stats are derived from the samples
    s = r.samples
    assert r.speedup == pytest.approx(stats.median_speedup(s.baseline_ns, s.candidate_ns, s.baseline_first))


def test_per_process_share_keeps_the_protocol_minimum():
    cfg = SamplerConfig(min_pairs=10, max_pairs=60, time_budget_s=30.0)
    assert cfg.per_process(1) is cfg
    two = cfg.per_process(2)
    assert (two.min_pairs, two.max_pairs, two.time_budget_s) == (5, 30, 15.0)
    three = cfg.per_process(3)
    assert (three.min_pairs, three.max_pairs) == (5, 20)   # never below 5 pairs per process
    with pytest.raises(ValueError, match="processes"):
        cfg.per_process(0)


def test_fixed_block_size_skips_sizing():
    timer = FakeTimer()
    sides = [InProcessSide(n, FakeKernel(n, 10_000), lambda s: (), timer) for n in ("A", "B")]
    cfg = SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.0, min_block_s=0.001)
    assert sample_pairs(*sides, cfg, seed=3, clock=timer.clock_s).iters_per_block >= 100   # sized
    fixed = sample_pairs(*sides, cfg, seed=3, clock=timer.clock_s, iters=7)
    assert fixed.iters_per_block == 7 and fixed.n_pairs == 6


def test_samples_concat_labels_processes_and_round_trips():
    a = PairedSamples((1.0, 2.0), (0.5, 1.0), 4, "ci_target")
    b = PairedSamples((3.0,), (1.5,), 4, "time_budget")
    both = PairedSamples.concat([a, b])
    assert both.processes == (0, 0, 1)
    assert both.baseline_ns == (1.0, 2.0, 3.0) and both.stop_reason == "ci_target,time_budget"
    assert PairedSamples.from_dict(both.to_dict()) == both
    with pytest.raises(ValueError, match="iters_per_block"):
        PairedSamples.concat([a, PairedSamples((1.0,), (1.0,), 5, "x")])
    with pytest.raises(ValueError, match="processes"):
        PairedSamples((1.0, 2.0), (1.0, 1.0), 1, "x", processes=(0,))
    # a version-1 document (no processes) is still read: one process
    d = _compare(FakeTimer(noise=0.02, seed=5)).to_dict()
    d["schema_version"] = 1
    del d["samples"]["processes"]
    old = perfbench.ComparisonResult.from_dict(d)
    assert old.samples.processes == () and old.summary.stability is None


class FirstCallCompiles(FakeKernel):
    """A FakeKernel whose first call also compiles for a second (Triton, torch.compile)."""

    calls = 0

    @property
    def cost_ns(self) -> float:   # (FakeTimer reads it once per call)
        self.calls += 1
        return self._cost_ns + (1e9 if self.calls == 1 else 0.0)

    @cost_ns.setter
    def cost_ns(self, value: float) -> None:
        self._cost_ns = value


@pytest.mark.parametrize("start", ["warm", "cold", "compiles"])
def test_blocks_are_sized_on_warm_calls(start):
    """The growth steps see the first, cold calls; the size the pairs use comes from the warm
    ones: ceil(10 ms / 2.6 ms) = 4 calls however the run starts.  Sized on the cold calls, a
    machine 1.3x slower for its first 50 ms made it 6 (15.6 ms blocks), and a first call that
    compiles made it 1 (2.6 ms blocks)."""
    drift = (lambda t_s: 1.3 if t_s < 0.05 else 1.0) if start == "cold" else None
    kernels = ((FirstCallCompiles("A", 11.5e6), FirstCallCompiles("B", 2.6e6)) if start == "compiles"
               else (FakeKernel("A", 11.5e6), FakeKernel("B", 2.6e6)))
    r = perfbench.compare(*kernels, lambda s: (), timer=FakeTimer(drift=drift), seed=1,
                          config=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.2, min_block_s=0.01))
    assert r.samples.iters_per_block == 4


def test_warm_iters_bounds():
    cfg = SamplerConfig(min_block_s=0.01, max_iters_per_block=4096)
    assert warm_iters(2.5e6, cfg) == 4 and warm_iters(2.6e6, cfg) == 4 and warm_iters(2.4e6, cfg) == 5
    assert warm_iters(50e6, cfg) == 1                  # one call already outlasts the minimum
    assert warm_iters(0.0, cfg) == 4096                # lost in the noise: the cap, not a division by 0
    assert warm_iters(1e6, SamplerConfig(min_block_s=0.0)) == 1


class SlowWhileSized(FakeKernel):
    """A FakeKernel 10x slower for its first `slow_calls` calls: through the warm-up that sizes
    the blocks and a few timed pairs, then at its real speed (the block-size attack)."""

    def __init__(self, name, cost_ns, slow_calls):
        super().__init__(name, cost_ns)
        self.calls, self.slow_calls = 0, slow_calls

    @property
    def cost_ns(self) -> float:   # (FakeTimer reads it once per call)
        self.calls += 1
        return self._cost_ns * (10 if self.calls <= self.slow_calls else 1)

    @cost_ns.setter
    def cost_ns(self, value: float) -> None:
        self._cost_ns = value


@pytest.mark.parametrize("slow_calls", [0, 6, 8])
def test_blocks_that_run_below_half_the_floor_are_resized_and_their_pairs_dropped(slow_calls):
    """Sized while the candidate ran at 26 ms a call, blocks of 1 call: 2.6 ms once it is fast.
    As soon as the median pair's faster block is under half of 10 ms, the size is set from the
    timed calls (4) and the pairs start again, so every pair kept ran >= 10 ms blocks at full
    speed.  (The warm-up makes 6 calls: 6 slow calls end with it, 8 run into the first pairs.)
    An honest candidate (0 slow calls) is sized right at once and never re-sized."""
    cand = SlowWhileSized("B", 2.6e6, slow_calls)
    r = perfbench.compare(FakeKernel("A", 11.5e6), cand, lambda s: (), timer=FakeTimer(), seed=1,
                          config=SamplerConfig(min_pairs=10, max_pairs=10, warmup_s=0.2, min_block_s=0.01))
    assert r.samples.iters_per_block == 4 and r.samples.n_pairs == 10
    assert r.samples.candidate_ns == (2.6e6,) * 10 and r.speedup == pytest.approx(11.5 / 2.6)


def test_a_fixed_block_size_is_never_resized():
    """A later worker process keeps the run's size (PairedSamples.concat needs one)."""
    timer = FakeTimer()
    sides = [InProcessSide(n, FakeKernel(n, 1e6), lambda s: (), timer) for n in ("A", "B")]
    cfg = SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.0, min_block_s=0.01)
    assert sample_pairs(*sides, cfg, seed=3, clock=timer.clock_s, iters=1).iters_per_block == 1


class SizeRecordingSide:
    """A fake Side that records (iters, seed) of every block; each call costs `ns_per_call`
    (`cold_ns` in its first block) on a shared fake clock."""

    def __init__(self, clock: list, ns_per_call: float, cold_ns: float | None = None):
        self.blocks: list[tuple[int, int]] = []
        self.clock, self.ns, self.cold = clock, ns_per_call, cold_ns or ns_per_call

    def run_block(self, iters, seed):
        ns = self.cold if not self.blocks else self.ns
        self.blocks.append((iters, seed))
        self.clock[0] += iters * ns * 1e-9
        return ns


@pytest.mark.parametrize("fixed", [None, 5])
def test_the_final_block_size_runs_twice_before_any_pair_is_timed(fixed):
    """#59: a side's first block of a size is cold (its outputs' memory first touched), and so is
    a fresh process's first block.  Sized (a first call of 3 ms grows blocks to 4 calls, then 2 ms
    calls to 8; the warm median, 2 ms, makes the pairs' size 5) or given (a later process, whose
    first block outlasts the warm-up), the pairs' size has run twice on every side before the
    first timed pair."""
    from perfbench.core.score_key import block_seed

    clock = [0.0]
    sides = [SizeRecordingSide(clock, 11.5e6), SizeRecordingSide(clock, 2e6, cold_ns=3e6 if fixed is None else 20e6)]
    cfg = SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.01, min_block_s=0.01)
    r = sample_pairs(*sides, cfg, seed=3, clock=lambda: clock[0], iters=fixed)
    assert r.iters_per_block == 5
    warm = block_seed(3, -1)
    for side in sides:
        before_pairs = side.blocks[:side.blocks.index(next(b for b in side.blocks if b[1] != warm))]
        assert [b for b in before_pairs if b[0] == 5] == [(5, warm)] * 2
    if fixed is None:
        assert [b[0] for b in sides[1].blocks[:3]] == [1, 4, 8]
