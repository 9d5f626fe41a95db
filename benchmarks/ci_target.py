"""#59: what each way of running a score buys, in CI width and wall, from CLI scores in one run.

Each `--config NAME=FLAGS` (FLAGS as one string, e.g. "plain=--s-ref table" or
"ten=--s-ref table --processes 10") is scored `--rounds` times, the configs alternated so that the
host's drift falls on all alike.  Per config: the median and max CI half-width (log scale), the
median wall, how many processes ran and why a score stopped, and `spread`: 1.96 x the SD of ln s
across the scores over the median half-width (about 1 when the CI is as wide as the scores'
own spread; below 0.5 too wide, above 1.5 too narrow).  With a live config, `live/plain` is its
median wall over the first config's.

    python benchmarks/ci_target.py [--rounds 10] [--task tasks/row_softmax] [--candidate solution]
        --config "plain=--s-ref table" --config "ten=--s-ref table --processes 10" [--out FILE.json]
"""
import argparse
import json
import math
import shlex
import statistics
from pathlib import Path

import score_wall   # (this script's directory is on sys.path)


def summary(rows: list[dict]) -> dict:
    ok = [r for r in rows if r["exit"] == 0 and r["speedup"] and len(r["ci"]) == 2]
    halves = sorted(0.5 * math.log(r["ci"][1] / r["ci"][0]) for r in ok)
    logs = [math.log(r["speedup"]) for r in ok]
    decisions = [((r["verdict"].get("comparison") or {}).get("extra") or {}).get("stopping", {}).get("decision")
                 for r in ok]
    median_half = statistics.median(halves) if halves else math.nan
    return {"scores": len(ok), "failed": len(rows) - len(ok),
            "median_half_width": median_half, "max_half_width": max(halves, default=math.nan),
            "median_wall_s": statistics.median(r["wall_s"] for r in rows),
            "speedup_median": statistics.median(r["speedup"] for r in ok) if ok else math.nan,
            "spread": 1.96 * statistics.stdev(logs) / median_half if len(logs) > 2 else math.nan,
            "processes": [r["processes"] for r in ok], "decisions": decisions}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--task", type=Path, default=Path("tasks/row_softmax"))
    ap.add_argument("--candidate", default="solution")
    ap.add_argument("--config", action="append", required=True, metavar="NAME=FLAGS")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    configs = dict(c.split("=", 1) for c in a.config)
    rows: dict[str, list[dict]] = {name: [] for name in configs}
    for i in range(a.rounds):
        for name, flags in configs.items():
            r = score_wall.one_score(a.task, a.task / f"{a.candidate}.py", ("--quiet", *shlex.split(flags)))
            rows[name].append(r)
            print(f"round {i + 1} {name:<8} exit {r['exit']} wall {r['wall_s']:5.1f} s  speedup {r['speedup']}  "
                  f"CI {r['ci']}  processes {r['processes']}", flush=True)
    print()
    first = None
    for name, rs in rows.items():
        s = summary(rs)
        first = first or s
        print(f"{name:<8} {s['scores']} scores ({s['failed']} failed): half-width median {100 * s['median_half_width']:.1f}%, "
              f"max {100 * s['max_half_width']:.1f}%; wall median {s['median_wall_s']:.1f} s "
              f"({s['median_wall_s'] / first['median_wall_s']:.2f}x the first); speedup median {s['speedup_median']:.3f}; "
              f"spread {s['spread']:.2f}; processes {s['processes']}; stopped {s['decisions']}")
    if a.out:
        a.out.write_text(json.dumps({name: {"summary": summary(rs), "scores": [
            {k: v for k, v in r.items() if k != "verdict"} for r in rs]} for name, rs in rows.items()}, indent=2))


if __name__ == "__main__":
    main()
