"""#38's protocol 6 against protocol 5 on the same samples: each task's solution scored by the CLI,
then the verdict's pairs summarised twice, with the period effect removed as the orders' medians'
estimate (protocol 6, the verdict's own numbers) and as their means' (protocol 5).  The same
samples, so the difference is the estimator's alone, not the hour's.

    python benchmarks/period_estimators.py [--rounds 2] [task ...]   (default: calibrate/cpu.toml's)
"""
import argparse
import math
import statistics
import tomllib
from pathlib import Path

import score_wall   # (this script's directory is on sys.path)
from period_means import means_shift
from perfbench.core import stats


def summaries(samples: dict) -> dict:
    args = (samples["baseline_ns"], samples["candidate_ns"])
    kw = dict(seed=0, processes=samples["processes"], baseline_first=samples["baseline_first"])
    out = {"medians": stats.summarize(*args, **kw).speedup}
    with means_shift():
        out["means"] = stats.summarize(*args, **kw).speedup
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    plan = score_wall.REPO / "calibrate" / "cpu.toml"
    tasks = args.tasks or [(plan.parent / t).resolve() for t in tomllib.loads(plan.read_text())["tasks"]]
    rows = []
    for r in range(args.rounds):
        for task in tasks:
            v = score_wall.one_score(task, task / "solution.py", ("--quiet", "--s-ref", "table"))["verdict"]
            e = summaries(v["comparison"]["samples"])
            d = math.log(e["medians"].value / e["means"].value)
            rows.append((task.name, d))
            est = "  ".join(f"{k} {e[k].value:.4f} [{e[k].low:.4f}, {e[k].high:.4f}]" for k in ("medians", "means"))
            print(f"{task.name:14s} round {r}  {est}  ln(medians / means) {100 * d:+.2f}%", flush=True)
    ds = [d for _, d in rows]
    print(f"\nln(medians / means) over {len(rows)} scores: mean {100 * statistics.mean(ds):+.2f}%, "
          f"median |.| {100 * statistics.median(map(abs, ds)):.2f}%, largest {100 * max(map(abs, ds)):.2f}%")


if __name__ == "__main__":
    main()
