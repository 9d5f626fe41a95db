"""#38's `--s-ref live` from the CLI, A/A style.  Scores a task's solution (the candidate is the
solution, so the candidate-over-solution ratio is 1 by construction) and its baseline (the
candidate's speedup is 1) with `--s-ref live`, alternately.  Per score: the candidate's speedup,
the live s_ref with its CI, the ratio with its CI, the AB and BA pair means of the solution's
comparison, the wall time.  Then: how often the ratio's CI (solution runs) and the speedup's CI
(baseline runs) cover 1, and the live s_ref's spread against the bench_configs entry.

    python benchmarks/live_s_ref.py [--rounds 4] [--task tasks/row_softmax]
"""
import argparse
import math
import statistics
from pathlib import Path

import numpy as np

import score_wall   # (this script's directory is on sys.path)


def one(task: Path, candidate: str) -> dict:
    r = score_wall.one_score(task, task / f"{candidate}.py", ("--quiet", "--s-ref", "live"))
    v = r["verdict"]
    if r["exit"] != 0 or not v.get("live_s_ref"):
        raise SystemExit(f"score exited {r['exit']}: {v.get('reasons')}")
    sol = v["comparison"]["solution"]["samples"]
    lr = np.log(np.asarray(sol["baseline_ns"]) / np.asarray(sol["candidate_ns"]))
    first = np.asarray(sol["baseline_first"], dtype=bool)
    live = v["live_s_ref"]
    return {"candidate": candidate, "wall": r["wall_s"], "s": v["speedup"], "ci": v["ci"],
            "s_ref": live["solution_speedup"], "s_ref_ci": live["solution_ci"],
            "ratio": live["candidate_over_solution"], "ratio_ci": live["ratio_ci"],
            "ab": float(lr[first].mean()), "ba": float(lr[~first].mean()), "pairs": len(lr)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--task", type=Path, default=score_wall.REPO / "tasks" / "row_softmax")
    args = ap.parse_args()
    rows = []
    for r in range(args.rounds):
        for candidate in (("solution", "baseline") if r % 2 == 0 else ("baseline", "solution")):
            row = one(args.task, candidate)
            rows.append(row)
            print(f"{row['candidate']:<9} s {row['s']:.3f} [{row['ci'][0]:.3f}, {row['ci'][1]:.3f}]  live s_ref "
                  f"{row['s_ref']:.3f} [{row['s_ref_ci'][0]:.3f}, {row['s_ref_ci'][1]:.3f}]  ratio {row['ratio']:.3f} "
                  f"[{row['ratio_ci'][0]:.3f}, {row['ratio_ci'][1]:.3f}]  solution AB {row['ab']:+.4f} BA "
                  f"{row['ba']:+.4f}  {row['pairs']} pairs  {row['wall']:.1f} s", flush=True)
    sol = [r for r in rows if r["candidate"] == "solution"]
    base = [r for r in rows if r["candidate"] == "baseline"]
    refs = [r["s_ref"] for r in rows]
    print(f"\nsolution as candidate: ratio CI covers 1 in {sum(r['ratio_ci'][0] <= 1 <= r['ratio_ci'][1] for r in sol)}"
          f"/{len(sol)}; median |ln ratio| {100 * statistics.median(abs(math.log(r['ratio'])) for r in sol):.2f}%")
    print(f"baseline as candidate: speedup CI covers 1 in {sum(r['ci'][0] <= 1 <= r['ci'][1] for r in base)}"
          f"/{len(base)}; median |ln s| {100 * statistics.median(abs(math.log(r['s'])) for r in base):.2f}%")
    print(f"live s_ref over {len(refs)} scores: median {statistics.median(refs):.3f}, range {min(refs):.3f}-"
          f"{max(refs):.3f}; mean AB {statistics.mean(r['ab'] for r in rows):+.4f} BA "
          f"{statistics.mean(r['ba'] for r in rows):+.4f}; "
          f"median wall {statistics.median(r['wall'] for r in rows):.1f} s")


if __name__ == "__main__":
    main()
