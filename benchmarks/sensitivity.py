"""(3) How many pairs (and seconds) until a 3% slowdown is detected at p < 0.01.

The candidate does 3% more work than the baseline (softmax over 3% extra rows).  The sampler
runs with no CI target; the first even pair count at which p < 0.01 and the CI excludes 1 is
recorded.  Also the FakeTimer prediction at the A/A noise level measured on this machine.
"""
import statistics
import sys
import time

import perfbench
from perfbench.timing.sampler import SamplerConfig
from perfbench.testing.timers import FakeKernel, FakeTimer

from cpu_kernels import make_inputs, softmax, softmax_with_extra

SLOWDOWN = 0.03


def pairs_to_detect(base, cand, make, cfg, seed, timer=None):
    hit = {}
    t0 = time.perf_counter()

    def watch(n, summary):
        if summary is not None and not hit and summary.p_value < 0.01 and summary.speedup.high < 1.0:
            hit.update(n=n, seconds=time.perf_counter() - t0, s=summary.speedup.value)

    r = perfbench.compare(base, cand, make, config=cfg, seed=seed, progress=watch, timer=timer)
    return hit, r


def main(reps: int = 3) -> None:
    cfg = SamplerConfig(min_pairs=8, max_pairs=200, warmup_s=0.1, target_rel_ci=0.0, time_budget_s=60)
    found = []
    for rep in range(reps):
        hit, r = pairs_to_detect(softmax, softmax_with_extra(SLOWDOWN), make_inputs, cfg, seed=rep)
        found.append(hit)
        print(f"  real rep {rep}: {hit or 'not detected'} (final s={r.speedup:.4f} after {r.samples.n_pairs} pairs)")
    fake = []
    for seed in range(20):
        hit, _ = pairs_to_detect(FakeKernel("A", 1e6), FakeKernel("B", 1e6 * (1 + SLOWDOWN)), lambda s: (),
                                 SamplerConfig(min_pairs=8, max_pairs=200, warmup_s=0, min_block_s=0,
                                               target_rel_ci=0.0), seed, FakeTimer(noise=0.02, seed=seed))
        fake.append(hit.get("n", 999))
    ok = [h for h in found if h]
    print(f"\nDetecting a {SLOWDOWN:.0%} slowdown at p<0.01 (softmax 512x1024 f32, CPU)")
    if ok:
        print(f"  real: detected {len(ok)}/{reps}; median {statistics.median(h['n'] for h in ok)} pairs, "
              f"{statistics.median(h['seconds'] for h in ok):.1f} s")
    else:
        print(f"  real: not detected in {reps} runs within 200 pairs / 60 s")
    print(f"  FakeTimer, 2% per-block noise: median {statistics.median(fake)} pairs (20 seeds)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
