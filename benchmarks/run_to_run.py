"""Run-to-run honesty of CPU speedups: N independent `perfbench score` runs of each shipped CPU
task's solution, on a quiet host and beside K CPU-burning processes.

    python benchmarks/run_to_run.py [--runs 5] [--busy 2] [task ...] [--out FILE.json]

Each run is a fresh `perfbench score --json` process (what a user runs).  Prints one row per
(task, condition): every run's speedup and CI, the median of the runs, how many runs' CIs contain
that median (a run that says `unstable` counts as honest), and whether the quiet and loaded
medians agree within their runs' CIs.  Not a test: the figures depend on the host.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cpu_tasks() -> list[str]:
    out = []
    for toml in sorted((REPO / "tasks").glob("*/task.toml")):
        doc = tomllib.loads(toml.read_text())
        if doc.get("device") == "cpu" and doc.get("kind", "perf") == "perf":
            out.append(toml.parent.name)
    return out


def score_once(task: str, extra: list[str]) -> dict:
    """One fresh `perfbench score` process: its speedup, CI and stability flag."""
    code = "import sys; from perfbench.cli.main import main; sys.argv[0] = 'perfbench'; main()"
    cmd = [sys.executable, "-c", code, "score", str(REPO / "tasks" / task),
           str(REPO / "tasks" / task / "solution.py"), "--json", "--quiet", *extra]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall = time.monotonic() - t0
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"error": (proc.stderr or proc.stdout)[-300:], "wall_s": wall}
    cmp_ = doc.get("comparison") or {}
    summ = cmp_.get("summary", {})
    return {"speedup": summ.get("speedup"), "ci": [summ.get("ci_low"), summ.get("ci_high")],
            "unstable": bool((summ.get("stability") or {}).get("unstable", False)),
            "process_speedups": (summ.get("stability") or {}).get("process_speedups"),
            "verdict": doc.get("verdict"), "wall_s": round(wall, 1)}


class Burners:
    """K processes that spin until stopped: the 'loaded host' condition."""

    def __init__(self, k: int):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]

    def __enter__(self) -> "Burners":
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.send_signal(signal.SIGKILL)
            p.wait()


def summarise(runs: list[dict]) -> tuple[float, int]:
    ok = [r for r in runs if r.get("speedup")]
    if not ok:
        return float("nan"), 0
    med = statistics.median(r["speedup"] for r in ok)
    honest = sum(1 for r in ok if r["unstable"] or r["ci"][0] <= med <= r["ci"][1])
    return med, honest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--busy", type=int, default=2, help="burner processes in the loaded condition")
    ap.add_argument("--quiet-only", action="store_true", help="skip the loaded condition")
    ap.add_argument("--score-args", default="", help="extra `perfbench score` options, e.g. '--processes 3'")
    ap.add_argument("--out", type=Path)
    opts = ap.parse_args()
    tasks = opts.tasks or cpu_tasks()
    results: dict = {}
    for task in tasks:
        for cond in ("quiet",) if opts.quiet_only else ("quiet", f"busy{opts.busy}"):
            with Burners(opts.busy if cond != "quiet" else 0):
                runs = [score_once(task, opts.score_args.split()) for _ in range(opts.runs)]
            results[f"{task}/{cond}"] = runs
            med, honest = summarise(runs)
            cells = " ".join(f"{r['speedup']:.2f}[{r['ci'][0]:.2f},{r['ci'][1]:.2f}]{'U' if r['unstable'] else ''}"
                             if r.get("speedup") else "ERR" for r in runs)
            print(f"{task:12s} {cond:6s} median {med:6.2f}  CI holds median {honest}/{len(runs)}  {cells}", flush=True)
            if opts.out:
                opts.out.write_text(json.dumps(results, indent=1))
    if opts.quiet_only:
        return 0
    print("\nquiet vs loaded: does each median lie inside the other condition's median run's CI?")
    for task in tasks:
        q, b = results[f"{task}/quiet"], results[f"{task}/busy{opts.busy}"]
        (mq, _), (mb, _) = summarise(q), summarise(b)
        qa = [r for r in q if r.get("speedup")]
        ba = [r for r in b if r.get("speedup")]
        if not qa or not ba:
            print(f"{task:12s} (errors)")
            continue
        rq = min(qa, key=lambda r: abs(r["speedup"] - mq))
        rb = min(ba, key=lambda r: abs(r["speedup"] - mb))
        agree = rq["ci"][0] <= mb <= rq["ci"][1] or rb["ci"][0] <= mq <= rb["ci"][1]
        print(f"{task:12s} quiet {mq:.2f} {rq['ci']}  loaded {mb:.2f} {rb['ci']}  agree: {'yes' if agree else 'NO'}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
