"""#38: what each worker's requests cost, by side, in A/A scores through the API.

The pairs' times are the scorer's clock around `run`; everything else a worker does between its
blocks (`stage`: free the last outputs, run the tripwires; the null blocks) is untimed but runs
on the same core right before the block, and must cost alike on both sides: the child-process
tripwire's scan of /proc cost the baseline's worker ~1 ms more than the candidate's sandboxed
one, and A/A speedups leaned ~1% toward the candidate.  This wraps `WorkerClient.request` and
prints, per side and request, the median and 90th percentile of its wall time, then the
baseline / candidate ratio of `stage`'s median.

    python benchmarks/request_costs.py [SCORES] [--task tasks/row_softmax]    (repository root)
"""
import argparse
import collections
import time

import numpy as np

from perfbench.isolation.processes import worker_client
from perfbench.pipeline.config import ScoreConfig
from perfbench.pipeline.score import score


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scores", type=int, nargs="?", default=2)
    ap.add_argument("--task", default="tasks/row_softmax")
    args = ap.parse_args()
    costs: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    request = worker_client.WorkerClient.request

    def timed_request(self, op, timeout_s, **fields):
        t0 = time.perf_counter_ns()
        try:
            return request(self, op, timeout_s, **fields)
        finally:
            name = str(op.value) + (" (null)" if fields.get("null") else "")
            costs[(self.label, name)].append((time.perf_counter_ns() - t0) / 1e3)

    worker_client.WorkerClient.request = timed_request
    for i in range(args.scores):
        res = score(args.task, f"{args.task}/baseline.py", ScoreConfig(s_ref_policy="table"))
        print(f"score {i}: s={res.speedup.value:.4f}" if res.speedup else f"score {i}: {res.verdict}", flush=True)
    print(f"\n{'side':10s} {'request':12s} {'n':>5s} {'median us':>10s} {'p90 us':>9s}")
    for (side, name), got in sorted(costs.items()):
        print(f"{side:10s} {name:12s} {len(got):5d} {np.median(got):10.1f} {np.quantile(got, 0.9):9.1f}")
    base, cand = costs.get(("baseline", "stage")), costs.get(("candidate", "stage"))
    if base and cand:
        print(f"\nstage, baseline / candidate median: {np.median(base) / np.median(cand):.2f}")


if __name__ == "__main__":
    main()
