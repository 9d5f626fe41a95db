"""#38's live-mode lean: does the candidate's timed-output checking make it read slower than the
same code as the live solution side?  Scores a task's solution with `--s-ref live` (the ratio
candidate / solution is 1 by construction) alternately with the default checks (every block
the budget allows; the scorer's float64 reference runs at the candidate's pair boundaries) and
with the fewest (`timed_check_fraction=0`, `timed_check_budget=0`: 2 blocks a process), and
prints each ratio and the mean ln ratio of each arm.  The solution side is never checked.

    python benchmarks/live_lean_checks.py [--rounds 5] [--task tasks/row_softmax]
"""
import argparse
import math
import statistics
import time
from pathlib import Path

from perfbench.pipeline.config import ScoreConfig
from perfbench.pipeline.score import score

REPO = Path(__file__).resolve().parents[1]
ARMS = {"checks": ScoreConfig(s_ref_policy="live"),
        "few": ScoreConfig(s_ref_policy="live", timed_check_fraction=0.0, timed_check_budget=0.0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--task", type=Path, default=REPO / "tasks" / "row_softmax")
    args = ap.parse_args()
    ratios: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for r in range(args.rounds):
        for arm in (("checks", "few") if r % 2 == 0 else ("few", "checks")):
            t0 = time.perf_counter()
            d = score(args.task, args.task / "solution.py", ARMS[arm]).to_dict()
            live = d["live_s_ref"]
            ratios[arm].append(live["candidate_over_solution"])
            print(f"{arm:6s} s {d['speedup']:.3f}  live {live['solution_speedup']:.3f}  ratio "
                  f"{live['candidate_over_solution']:.3f} [{live['ratio_ci'][0]:.3f}, {live['ratio_ci'][1]:.3f}]  "
                  f"{d['comparison']['extra'].get('timed_output_checks')} checks  {time.perf_counter() - t0:.1f} s",
                  flush=True)
    for arm, v in ratios.items():
        print(f"{arm}: mean ln ratio {100 * statistics.mean(math.log(x) for x in v):+.2f}% over {len(v)} scores")


if __name__ == "__main__":
    main()
