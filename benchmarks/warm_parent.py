"""Zygotes from a kept warm parent vs spawned zygotes, in one process that scores many candidates
(an RL loop, a batch's row server, a test session): what each costs, and whether the speedups
move (the rule in benchmarks/results/cost.md, "where a score's time goes": an A/B of speedups,
not only of wall time).

Alternates, in one process, `score(..., ScoreConfig(warm_parent=True))` (zygotes forked by this
process's warm parent, started once before the first pair) and `warm_parent=False` (each
zygote a new interpreter importing torch), swapping the order every pair.  Per pair it scores an
honest candidate (speedup, wall, candidate zygote's start-up) and a candidate the gate rejects
(wall).  Prints every score, then medians and the paired mean and standard error of
log(warm/spawned) speedup.

    python benchmarks/warm_parent.py [--pairs 6] [--task tasks/row_softmax]
        [--candidate tasks/row_softmax/solution.py] [--rejected tests/fixtures/candidates/wrong_values.py]
"""
import argparse
import math
import statistics
import time
from pathlib import Path

from perfbench.isolation.processes.warm_parent_handle import WarmParents
from perfbench.pipeline.score import ScoreConfig, score

REPO = Path(__file__).resolve().parents[1]


def one(task: Path, candidate: Path, warm: bool, parents: WarmParents) -> tuple[float, float | None, float | None, str]:
    t0 = time.perf_counter()
    r = score(task, candidate, ScoreConfig(warm_parent=warm), warm_parents=parents)
    wall = time.perf_counter() - t0
    s = r.comparison.speedup if r.comparison is not None else None
    return wall, s, r.isolation.get("zygote_startup_ms"), r.isolation.get("zygote_source", "?")


def mean_and_se(xs: list[float]) -> tuple[float, float]:
    return statistics.mean(xs), (statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--task", type=Path, default=REPO / "tasks" / "row_softmax")
    ap.add_argument("--candidate", type=Path, default=None)
    ap.add_argument("--rejected", type=Path, default=REPO / "tests" / "fixtures" / "candidates" / "wrong_values.py")
    args = ap.parse_args()
    candidate = args.candidate or args.task / "solution.py"
    parents = WarmParents()
    try:
        one(args.task, args.rejected, True, parents)   # the warm parent starts here, outside the pairs
        runs: dict[bool, list] = {True: [], False: []}
        rejects: dict[bool, list[float]] = {True: [], False: []}
        for i in range(args.pairs):
            for warm in ((True, False) if i % 2 == 0 else (False, True)):
                wall, s, startup, source = one(args.task, candidate, warm, parents)
                rwall = one(args.task, args.rejected, warm, parents)[0]
                runs[warm].append((wall, s, startup))
                rejects[warm].append(rwall)
                print(f"pair {i} {'warm' if warm else 'spawned':7s} ({source}): honest {wall:5.1f} s s={s:.3f} "
                      f"zygote {startup:6.0f} ms; rejected {rwall:4.1f} s", flush=True)
    finally:
        parents.close()
    for warm in (True, False):
        rs = runs[warm]
        print(f"{'warm' if warm else 'spawned':7s}: median honest wall {statistics.median(r[0] for r in rs):.1f} s, "
              f"median zygote start-up {statistics.median(r[2] for r in rs):.0f} ms, "
              f"median rejection wall {statistics.median(rejects[warm]):.2f} s, "
              f"median speedup {statistics.median(r[1] for r in rs):.3f}")
    m, se = mean_and_se([math.log(w[1] / s[1]) for w, s in zip(runs[True], runs[False])])
    print(f"{args.pairs} pairs: mean log(warm/spawned) speedup {m:+.4f} (standard error {se:.4f})")


if __name__ == "__main__":
    main()
