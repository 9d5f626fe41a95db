"""#59: the same pairs split over more worker processes, simulated (FakeTimer, perfbench/testing/simulate.py).

For each process count k, `--runs` seeded scores of a candidate of known speedup, fixed length
(no early stop), the same total pairs split evenly: the median and largest CI half-width (log
scale) and the share of CIs that cover the truth.  The host is a pair noise (the SD of one
pair's ln ratio: `--pair-sd`, measured by benchmarks/process_noise.py) and a per-process effect
(`--process-sd`, the SD of a process's own offset: layout).  The wall a real score would take is
not simulated: process_noise.py measures a process's cost.

    python benchmarks/process_split.py [--runs 200] [--pairs 60] [--pair-sd 0.15] [--process-sd 0.0 0.03]
"""
from __future__ import annotations

import argparse
import math
import statistics

from perfbench.core.stopping import StoppingRule
from perfbench.timing.sampler import SamplerConfig
from perfbench.testing.simulate import SimulatedHost, simulated_score


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("--pair-sd", type=float, default=0.15)
    ap.add_argument("--process-sd", type=float, nargs="+", default=[0.0, 0.03])
    ap.add_argument("--processes", type=int, nargs="+", default=[3, 6, 10, 15])
    ap.add_argument("--truth", type=float, default=3.0)
    args = ap.parse_args()
    print(f"{args.pairs} pairs, pair SD {100 * args.pair_sd:.0f}%, true speedup {args.truth}, {args.runs} runs each")
    print(" process SD   k  pairs/process  half (median)  half (max)  covers")
    for sigma in args.process_sd:
        # one call per block (min_block_s 0): a pair's ln ratio is two calls' noise
        host = SimulatedHost(call_noise=args.pair_sd / math.sqrt(2), process_sigma=sigma)
        for k in args.processes:
            sampler = SamplerConfig(min_pairs=args.pairs, max_pairs=args.pairs, warmup_s=0.0, min_block_s=0.0,
                                    n_resamples=500, time_budget_s=1e9, target_rel_ci=0.0)
            rule = StoppingRule(k, None, target_rel_ci=0.0)
            runs = [simulated_score(args.truth, rule, sampler, host, seed=20_000 + i) for i in range(args.runs)]
            halves = [r.summary.speedup.rel_half_width for r in runs]
            print(f"{100 * sigma:9.1f}%  {k:3d}  {runs[0].samples.n_pairs / k:12.1f}  {100 * statistics.median(halves):12.1f}%  "
                  f"{100 * max(halves):9.1f}%  {sum(r.covers(args.truth) for r in runs) / args.runs:6.1%}", flush=True)


if __name__ == "__main__":
    main()
