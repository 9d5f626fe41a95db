"""(2) AB-BA vs sequential timing (all A, then all B) when the machine changes half-way.

Simulated: FakeTimer with a 30% step slowdown at the middle of the run, true speedup 1/1.05.
Real: the same CPU kernel on both sides (true s = 1) and competing CPU-burning processes started
half-way through the run.  Prints each method's error |ln(s_measured / s_true)| (the median over
the reps) and their ratio; for the real runs also AB-BA's samples re-scored with protocol 5's
period correction (the orders' means, period_means.py), which the stretched blocks under load
moved.

    python benchmarks/drift.py [--reps 9]
"""
import argparse
import statistics
import time

import numpy as np

import perfbench
from perfbench.selfcheck.cpu_load import CpuLoad
from perfbench.timing.inprocess import InProcessSide
from perfbench.timing.sampler import SamplerConfig
from perfbench.timing.sequential import sequential_speedup
from perfbench.testing.timers import FakeKernel, FakeTimer, step_drift
from perfbench.timing.timers import CpuTimer

from cpu_kernels import make_inputs, softmax
from period_means import speedup_with_means

N_PAIRS = 20


def simulated(reps: int = 20) -> tuple[float, float]:
    true_s = 1 / 1.05
    base, cand = FakeKernel("A", 1e6), FakeKernel("B", 1.05e6)
    cfg = SamplerConfig(min_pairs=N_PAIRS, max_pairs=N_PAIRS, warmup_s=0.0, min_block_s=0.0)
    ab, sq = [], []
    for seed in range(reps):
        # a whole run lasts ~2 * N_PAIRS ms of simulated time; the step lands in the middle
        drift = step_drift(at_s=N_PAIRS * 1.025e-3, factor=1.3)
        r = perfbench.compare(base, cand, lambda s: (), timer=FakeTimer(noise=0.01, drift=drift, seed=seed),
                              config=cfg, seed=seed)
        ab.append(abs(np.log(r.speedup / true_s)))
        timer = FakeTimer(noise=0.01, drift=drift, seed=seed)
        sides = [InProcessSide(n, k, lambda s: (), timer) for n, k in (("A", base), ("B", cand))]
        sq.append(abs(np.log(sequential_speedup(*sides, n_blocks=N_PAIRS, iters=1, seed=seed) / true_s)))
    return statistics.median(ab), statistics.median(sq)


def real(reps: int) -> tuple[float, float, float]:
    cfg = SamplerConfig(min_pairs=N_PAIRS, max_pairs=N_PAIRS, warmup_s=0.1, target_rel_ci=0.0)
    ab, means, sq = [], [], []
    for rep in range(reps):
        with CpuLoad() as load:
            r = perfbench.compare(softmax, softmax, make_inputs, config=cfg, seed=rep,
                                  progress=lambda n, _s: load.start() if n == N_PAIRS // 2 else None)
        ab.append(abs(np.log(r.speedup)))
        s_means = speedup_with_means(r.samples.baseline_ns, r.samples.candidate_ns, r.samples.baseline_first)
        means.append(abs(np.log(s_means)))
        timer = CpuTimer()
        a, b = (InProcessSide(n, softmax, make_inputs, timer) for n in ("A", "B"))
        iters = r.samples.iters_per_block
        a.run_block(iters, 0), b.run_block(iters, 0)  # warm
        with CpuLoad() as load:
            s = sequential_speedup(a, b, n_blocks=N_PAIRS, iters=iters, seed=rep, between=load.start)
        sq.append(abs(np.log(s)))
        print(f"  real rep {rep}: AB-BA s={r.speedup:.4f} (means' correction {s_means:.4f})  sequential s={s:.4f}",
              flush=True)
    return statistics.median(ab), statistics.median(means), statistics.median(sq)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=9, help="real runs (each ~4 s)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    sim_ab, sim_sq = simulated()
    real_ab, real_means, real_sq = real(args.reps)
    print(f"\nDrift robustness ({N_PAIRS} pairs / blocks per side), {time.perf_counter() - t0:.1f} s")
    print(f"  {'scenario':<44} {'AB-BA err':>10} {'seq err':>10} {'seq/AB-BA':>10}")
    for name, a, s in (("FakeTimer, 30% step half-way (20 seeds)", sim_ab, sim_sq),
                       (f"CPU A/A, load starts half-way ({args.reps} reps)", real_ab, real_sq),
                       ("... the same samples, means' period correction", real_means, real_sq)):
        print(f"  {name:<44} {a * 100:>9.2f}% {s * 100:>9.2f}% {s / max(a, 1e-12):>9.1f}x")


if __name__ == "__main__":
    main()
