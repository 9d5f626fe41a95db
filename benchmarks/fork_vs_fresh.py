"""Forked workers vs fresh interpreters (#15, #9): wall time of a score, and whether forking every
worker from one warmed zygote changes what the between-process CI samples.

    python benchmarks/fork_vs_fresh.py [--runs 6] [--task tasks/row_softmax] [--candidate FILE]

Scores the candidate RUNS times each way, alternating (fresh, fork / fork, fresh) so drift of the
host falls on both, every score measuring all its processes (no early stop).  Prints per way: the
median wall time, the median worker start (ms), the mean within-score spread of the processes'
log speedups (what the cluster CI samples), the spread of the scores' log speedups (run to run),
and how many scores' CIs hold the median of all scores.  Not a test: the figures are the host's.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from perfbench.pipeline.score import ScoreConfig, score  # noqa: E402


def one(task: Path, cand: Path, fork: bool) -> dict:
    t0 = time.perf_counter()
    r = score(task, cand, ScoreConfig(fork_workers=fork, stop_early=False))
    wall = time.perf_counter() - t0
    if r.comparison is None:
        raise SystemExit(f"{cand}: {r.verdict} {[x.code for x in r.reasons]}")
    summary = r.comparison.summary
    logs = [math.log(s) for s in summary.stability.process_speedups]
    return {"wall": wall, "s": r.comparison.speedup, "ci": r.comparison.ci, "proc_sd": statistics.stdev(logs),
            "startup_ms": (r.isolation or {}).get("startup_ms"),
            "base_ms": statistics.median(r.comparison.samples.baseline_ns) / 1e6,
            "cand_ms": statistics.median(r.comparison.samples.candidate_ns) / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--task", type=Path, default=REPO / "tasks" / "row_softmax")
    ap.add_argument("--candidate", type=Path, default=None)
    args = ap.parse_args()
    cand = args.candidate or args.task / "solution.py"
    rows: dict[bool, list[dict]] = {False: [], True: []}
    for i in range(args.runs):
        for fork in ((False, True) if i % 2 == 0 else (True, False)):
            r = one(args.task, cand, fork)
            rows[fork].append(r)
            print(f"run {i + 1} {'fork ' if fork else 'fresh'}: {r['wall']:.1f} s  s={r['s']:.3f} "
                  f"CI=[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]  process sd={r['proc_sd']:.4f}  "
                  f"start={r['startup_ms']} ms  baseline {r['base_ms']:.3f} ms  candidate {r['cand_ms']:.3f} ms", flush=True)
    every = statistics.median(r["s"] for rs in rows.values() for r in rs)
    print(f"\n{'workers':8s} {'wall s':>7s} {'start ms':>9s} {'within sd':>10s} {'run-to-run sd':>14s} "
          f"{'CI holds median':>16s}")
    for fork, rs in rows.items():
        print(f"{'forked' if fork else 'fresh':8s} {statistics.median(r['wall'] for r in rs):7.1f} "
              f"{statistics.median(r['startup_ms'] or 0 for r in rs):9.0f} "
              f"{statistics.mean(r['proc_sd'] for r in rs):10.4f} "
              f"{statistics.stdev(math.log(r['s']) for r in rs):14.4f} "
              f"{sum(r['ci'][0] <= every <= r['ci'][1] for r in rs):>11d} of {len(rs)}")
    print(f"(median speedup of all {sum(map(len, rows.values()))} scores: {every:.3f})")


if __name__ == "__main__":
    main()
