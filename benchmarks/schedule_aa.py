"""#38's A/A of the schedule, in process: `perfbench.compare(f, f)` of a 160x160 float64 matmul.

For each compare it prints the speedup and CI, the mean ln(t_base / t_cand) of the
baseline-first and the candidate-first pairs, and the period effect where perfbench reports one.
The closing table gives CI coverage of 1, median |ln s| and the mean AB and BA offsets.  It reads
only what every perfbench since 0.1 has, so the same script measures an older checkout too:

    python benchmarks/schedule_aa.py [N]                        # this checkout
    PYTHONPATH=/path/to/old/checkout python benchmarks/schedule_aa.py [N]
"""
import statistics
import sys
import time

import numpy as np
import torch

import perfbench

N = 160


def make_inputs(seed: int) -> tuple:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(N, N, generator=g, dtype=torch.float64), torch.randn(N, N, generator=g, dtype=torch.float64)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def orders(samples) -> list[bool]:
    """Baseline first, per pair: recorded since schema 3, AB, BA, ... before."""
    first = getattr(samples, "baseline_first", ())
    return list(first) if first else [i % 2 == 0 for i in range(samples.n_pairs)]


def main(reps: int = 16) -> None:
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    covered, errs, ab_means, ba_means = 0, [], [], []
    for rep in range(reps):
        r = perfbench.compare(matmul, matmul, make_inputs, seed=1000 + rep)
        lr = np.log(np.asarray(r.samples.baseline_ns) / np.asarray(r.samples.candidate_ns))
        first = np.asarray(orders(r.samples))
        ab, ba = float(lr[first].mean()), float(lr[~first].mean())
        ab_means.append(ab)
        ba_means.append(ba)
        errs.append(abs(np.log(r.speedup)))
        covered += r.ci[0] <= 1.0 <= r.ci[1]
        period = getattr(r.summary, "period", None)
        said = f" period {period.first_over_second:.4f} p={period.p_value:.2g}" if period is not None else ""
        print(f"  {rep:2d}: s={r.speedup:.4f} CI [{r.ci[0]:.4f}, {r.ci[1]:.4f}] {r.samples.n_pairs} pairs "
              f"AB {ab:+.4f} BA {ba:+.4f}{said}", flush=True)
    print(f"\nA/A, {reps} compares of a {N}x{N} float64 matmul in process ({time.perf_counter() - t0:.0f} s), "
          f"perfbench {perfbench.__file__}")
    print(f"  CI covers 1            {covered}/{reps}")
    print(f"  median |ln s|          {100 * statistics.median(errs):.2f}%")
    print(f"  mean ln(b/c) AB pairs  {statistics.mean(ab_means):+.4f}")
    print(f"  mean ln(b/c) BA pairs  {statistics.mean(ba_means):+.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 16)
