"""#38 item 4: does an untimed primer call, or a fixed settle, before each timed block remove the
first-block penalty?  In-process A/A scores (a task's baseline as the candidate), three
variants alternating in rotating order:

- none:   as `perfbench score` runs;
- settle: SETTLE_S of idle time after the scorer's work, before each timed request;
- primer: one untimed call of the side's kernel on the staged inputs, before each timed request.

Both variants are patched into ArenaSide here, not product options: they ship only if this
shows they help.  Per variant: the period effect (first block over second, mean and spread over
the runs), the median abs(ln s), CI coverage of 1, and the wall time of a score.

    python benchmarks/period_ab.py [--rounds 6] [--task tasks/row_softmax] [--settle-ms 10]
"""
import argparse
import math
import statistics
import time
from pathlib import Path

from perfbench.pipeline.score import ScoreConfig, score
from perfbench.sides import cpu_side

REPO = Path(__file__).resolve().parents[1]
_timed_request = cpu_side.ArenaSide._timed_request


def variant(name: str, settle_s: float):
    def settle(self, iters, null):
        time.sleep(settle_s)
        return _timed_request(self, iters, null)

    def primer(self, iters, null):
        if not null:
            self.client.request("run", self.timeout_s, iters=1, null=False)   # untimed; thaws the worker
            self.client.freeze()
        return _timed_request(self, iters, null)

    return {"none": _timed_request, "settle": settle, "primer": primer}[name]


def one(task: Path, name: str, settle_s: float) -> dict:
    cpu_side.ArenaSide._timed_request = variant(name, settle_s)
    try:
        t0 = time.perf_counter()
        r = score(task, task / "baseline.py", ScoreConfig())
        wall = time.perf_counter() - t0
    finally:
        cpu_side.ArenaSide._timed_request = _timed_request
    c = r.comparison
    p = c.summary.period
    return {"s": c.speedup, "ci": c.ci, "period": p.first_over_second if p else float("nan"), "wall": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--task", type=Path, default=REPO / "tasks" / "row_softmax")
    ap.add_argument("--settle-ms", type=float, default=10.0)
    args = ap.parse_args()
    names = ["none", "settle", "primer"]
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for i in range(args.rounds):
        for name in names[i % 3:] + names[:i % 3]:
            r = one(args.task, name, args.settle_ms / 1e3)
            runs[name].append(r)
            print(f"round {i} {name:6s}: s={r['s']:.4f} CI [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] "
                  f"first/second {r['period']:.4f}  {r['wall']:.1f} s", flush=True)
    print(f"\nA/A of {args.task.name}'s baseline, {args.rounds} in-process scores per variant "
          f"(settle {args.settle_ms:g} ms)")
    print(f"  {'variant':8s} {'first/second mean':>18s} {'sd':>7s} {'med |ln s|':>11s} {'covers 1':>9s} {'med wall':>9s}")
    for name, rs in runs.items():
        logs = [math.log(r["period"]) for r in rs]
        print(f"  {name:8s} {math.exp(statistics.mean(logs)):>18.4f} {statistics.stdev(logs):>7.4f} "
              f"{100 * statistics.median(abs(math.log(r['s'])) for r in rs):>10.2f}% "
              f"{sum(r['ci'][0] <= 1 <= r['ci'][1] for r in rs):>6d}/{len(rs):<2d} "
              f"{statistics.median(r['wall'] for r in rs):>8.1f}s")


if __name__ == "__main__":
    main()
