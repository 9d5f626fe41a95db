"""#58 (6): every shipped CPU task's solution and baseline through the gate, with and without
its input contract: the gate's wall time each way, and any failure.

    python benchmarks/contract_gate.py [TASK ...] [--repeat N]

Prints one row per (task, side): checks and seconds without the contract (`transforms = []`),
then with it, then what failed.  Times are wall seconds of `gate_only` (a fresh sandboxed
worker: start, load, the gate's calls); run on a quiet machine, one after the other.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")   # Triton tasks on the CPU (before any kernel is decorated)

from perfbench.pipeline.config import ScoreConfig
from perfbench.pipeline.gate import gate_only
from perfbench.task.spec import load_task

TASKS = Path(__file__).resolve().parents[1] / "tasks"


def timed(spec, candidate: Path, repeat: int) -> tuple[int, float, list]:
    times, checks, fails = [], 0, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        checks, fails = gate_only(spec, candidate, ScoreConfig(device="cpu"))
        times.append(time.perf_counter() - t0)
    return checks, statistics.median(times), fails


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    names = args.tasks or sorted(p.name for p in TASKS.iterdir() if (p / "task.toml").is_file())
    print(f"{'task':<20} {'side':<9} {'before':>14} {'after':>14}  contract / failures")
    bad = 0
    for name in names:
        spec = load_task(TASKS / name)
        if spec.kind != "perf" or (spec.device != "cpu" and spec.family != "triton"):
            print(f"{name:<20} (skipped: {spec.device} {spec.kind} task)")
            continue
        for side in ("solution", "baseline"):
            n0, t0, f0 = timed(dataclasses.replace(spec, contract=()), spec.file(side), args.repeat)
            n1, t1, f1 = timed(spec, spec.file(side), args.repeat)
            bad += bool(f0 or f1)
            what = "; ".join(f"{f.reason}: {f.message[:120]}" for f in f0 + f1) or ", ".join(spec.contract or ("standard",))
            print(f"{name:<20} {side:<9} {n0:>3} {t0:>7.2f} s {n1:>3} {t1:>7.2f} s  {what}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
