"""(1) A/A noise: a real CPU kernel compared with itself, repeated.

Prints the median |ln s| (how far from 1.0 an A/A speedup lands), the CI half-width, and how
often A/A is called "significant" (should be ~alpha).  Usage: python benchmarks/aa_noise.py [REPS]
"""
import statistics
import sys
import time

import numpy as np

import perfbench
from perfbench.timing.sampler import SamplerConfig

from cpu_kernels import make_inputs, softmax


def main(reps: int = 12) -> None:
    cfg = SamplerConfig(min_pairs=10, max_pairs=10, warmup_s=0.1, target_rel_ci=0.0)
    errs, widths, p01, p05 = [], [], 0, 0
    t0 = time.perf_counter()
    for rep in range(reps):
        r = perfbench.compare(softmax, softmax, make_inputs, config=cfg, seed=rep)
        errs.append(abs(np.log(r.speedup)))
        widths.append(r.summary.speedup.rel_half_width)
        p01 += r.p_value < 0.01
        p05 += r.p_value < 0.05
        print(f"  rep {rep:2d}: s={r.speedup:.4f} CI [{r.ci[0]:.4f}, {r.ci[1]:.4f}] p={r.p_value:.3f}")
    print(f"\nA/A on softmax 512x1024 f32 (CPU), {reps} runs x 10 pairs, {time.perf_counter() - t0:.1f} s")
    print(f"  median |ln s|            {statistics.median(errs) * 100:.2f} %")
    print(f"  max |ln s|               {max(errs) * 100:.2f} %")
    print(f"  median CI half-width     {statistics.median(widths) * 100:.2f} %")
    print(f"  'significant' p<0.01     {p01}/{reps}")
    print(f"  'significant' p<0.05     {p05}/{reps}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 12)
