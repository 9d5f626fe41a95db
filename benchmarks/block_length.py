"""#59: does a longer block buy precision per second?  Scores a task's solution in this process
(`perfbench.score`, the default pipeline, early stopping on R_perf off) at several block floors
(`SamplerConfig.min_block_s`), alternated, and prints per floor the pairs' own noise (the SD of
the period-corrected ln ratios within each process, pooled), the seconds a pair costs (the
processes' `sample_s` over their pairs) and their product's square root, `pair SD x sqrt(s per
pair)`: the noise of one second of pairs.  If the noise is a per-block hiccup of fixed size,
longer blocks lower it; if it scales with the block, they only cost pairs.

    python benchmarks/block_length.py [--runs 3] [--floors 0.01 0.02 0.04] [--task tasks/row_softmax]
"""
import argparse
import math
import statistics
from pathlib import Path

import numpy as np

from perfbench.pipeline.config import ScoreConfig
from perfbench.pipeline.score import score
from perfbench.timing.sampler import SamplerConfig

REPO = Path(__file__).resolve().parents[1]


def pair_noise(smp) -> tuple[float, float]:
    """(pooled within-process SD of the period-corrected ln ratios, SD of the process medians)."""
    lr = np.log(np.asarray(smp.baseline_ns) / np.asarray(smp.candidate_ns))
    first, procs = np.asarray(smp.baseline_first, dtype=bool), np.asarray(smp.processes)
    resid, medians = [], []
    for p in np.unique(procs):
        x, f = lr[procs == p], first[procs == p]
        shift = (np.median(x[f]) - np.median(x[~f])) / 2 if f.any() and (~f).any() else 0.0
        x = x - np.where(f, shift, -shift)
        medians.append(float(np.median(x)))
        resid.extend(x - np.median(x))
    return float(np.std(resid, ddof=1)), float(np.std(medians, ddof=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--floors", type=float, nargs="+", default=[0.01, 0.02, 0.04])
    ap.add_argument("--task", type=Path, default=REPO / "tasks" / "row_softmax")
    args = ap.parse_args()
    rows: dict[float, list[tuple]] = {f: [] for f in args.floors}
    for i in range(args.runs):
        for floor in (args.floors if i % 2 == 0 else args.floors[::-1]):
            cfg = ScoreConfig(sampler=SamplerConfig(min_block_s=floor), target_r_ci=None, s_ref_policy="table")
            r = score(args.task, args.task / "solution.py", cfg)
            smp = r.comparison.samples
            sd, proc_sd = pair_noise(smp)
            per_pair = sum(p["sample_s"] for p in r.comparison.extra["process_seconds"]) / smp.n_pairs
            half = r.speedup.rel_half_width
            rows[floor].append((sd, proc_sd, per_pair, half, smp.iters_per_block, smp.n_pairs))
            print(f"floor {1000 * floor:3.0f} ms run {i + 1}: s={r.speedup.value:.3f} half {100 * half:4.1f}%  "
                  f"pairs {smp.n_pairs}  iters {smp.iters_per_block}  pair SD {100 * sd:4.1f}%  proc SD {100 * proc_sd:4.1f}%  "
                  f"{1000 * per_pair:4.0f} ms a pair", flush=True)
    print("\nfloor   pair SD  proc SD  ms a pair  pair SD x sqrt(s a pair)  half (median)")
    for floor, rs in rows.items():
        sd, proc_sd, per_pair, half = (statistics.median(r[k] for r in rs) for k in range(4))
        print(f"{1000 * floor:3.0f} ms  {100 * sd:6.1f}%  {100 * proc_sd:6.1f}%  {1000 * per_pair:8.0f}  "
              f"{100 * sd * math.sqrt(per_pair):23.2f}%  {100 * half:6.1f}%")


if __name__ == "__main__":
    main()
