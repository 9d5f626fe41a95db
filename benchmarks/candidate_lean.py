"""#38's candidate lean, with a control in the same run: does code read slower as the candidate
than the same code as the (trusted) live solution side?

A copy of the task in a temporary directory whose solution.py is its baseline.py; each score
times that baseline as the candidate with `--s-ref live`, so one interleaved run holds the
same code three times: as the baseline, as the solution (a trusted worker forked from the
baseline's zygote) and as the candidate (its own, sandboxed worker).  Both speedups should be 1.
Per score: ln s of the candidate and of the solution against the baseline, and their
difference; then each arm's means with standard errors.  Arms (alternating, reversed every
other round): `default`, `nosandbox` (ScoreConfig(sandbox=False)), `fewest` (2 timed-output
checks a process, the least a score does).

    python benchmarks/candidate_lean.py [--rounds 16] [--arms default,nosandbox] [--task tasks/row_softmax]

benchmarks/RESULTS.md, 2026-12-06: over 126 such scores the candidate read -0.67% (SE 0.16) and
the solution +0.15% (SE 0.17), on and off over minutes.
"""
import argparse
import dataclasses
import math
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from perfbench.pipeline.config import ScoreConfig
from perfbench.pipeline.score import score

import live_lean_checks   # (this script's directory is on sys.path): its two live configurations

REPO = Path(__file__).resolve().parents[1]
ARMS = {"default": live_lean_checks.ARMS["checks"],
        "nosandbox": dataclasses.replace(live_lean_checks.ARMS["checks"], sandbox=False),
        "fewest": live_lean_checks.ARMS["few"]}


def control_task(task: Path, into: Path) -> Path:
    """A copy of `task` whose solution is its baseline (no bytecode, no bench_configs entry)."""
    copy = into / task.name
    shutil.copytree(task, copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(copy / "baseline.py", copy / "solution.py")
    return copy


def one(task: Path, cfg: ScoreConfig) -> tuple[float, float]:
    d = score(task, task / "baseline.py", cfg).to_dict()
    if d["verdict"] != "scored":
        raise SystemExit(f"the baseline as the candidate was not scored: {d['reasons']}")
    return math.log(d["speedup"]), math.log(d["live_s_ref"]["solution_speedup"])


def mean_se(xs: list[float]) -> str:
    se = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
    return f"{100 * statistics.mean(xs):+.2f}% (SE {100 * se:.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--arms", default="default,nosandbox", help=f"comma-separated, of {', '.join(ARMS)}")
    ap.add_argument("--task", type=Path, default=REPO / "tasks" / "row_softmax")
    args = ap.parse_args()
    arms = args.arms.split(",")
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise SystemExit(f"--arms: unknown {', '.join(unknown)}; expected some of {', '.join(ARMS)}")
    got: dict[str, list[tuple[float, float]]] = {a: [] for a in arms}
    with tempfile.TemporaryDirectory(prefix="perfbench-lean-") as tmp:
        task = control_task(args.task.resolve(), Path(tmp))
        for r in range(args.rounds):
            for arm in (arms if r % 2 == 0 else arms[::-1]):
                t0 = time.perf_counter()
                cand, sol = one(task, ARMS[arm])
                got[arm].append((cand, sol))
                print(f"{time.strftime('%H:%M:%S')} {arm:9s} candidate {100 * cand:+6.2f}%  "
                      f"solution {100 * sol:+6.2f}%  difference {100 * (cand - sol):+6.2f}%  "
                      f"{time.perf_counter() - t0:.1f} s", flush=True)
    print("\nln s against the baseline, mean (SE) over the scores")
    for arm, v in got.items():
        print(f"  {arm:9s} n={len(v):<3d} candidate {mean_se([c for c, _ in v])}  solution "
              f"{mean_se([s for _, s in v])}  difference {mean_se([c - s for c, s in v])}")


if __name__ == "__main__":
    main()
