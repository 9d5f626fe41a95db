"""Selfcheck's run-to-run section: independent scores of one shipped task's solution, their
spread against the CI each run claims.  A run's CI is honest if it contains the runs' median
(or the run itself said `unstable`)."""
from __future__ import annotations

import dataclasses
import math
import statistics
from pathlib import Path
from typing import Any, Callable

from ..pipeline.score import ScoreConfig, score
from ..task.spec import load_task
from .tasks_gate import shipped_tasks_dir

PREFERRED = ("row_softmax", "triton_row_softmax")   # cheap, stable tasks per device, if shipped


def pick_task(device: str, root: Path | None = None) -> Path | None:
    """The shipped perf task on this device the section scores."""
    found = []
    for toml in sorted((root or shipped_tasks_dir()).glob("*/task.toml")):
        spec = load_task(toml.parent)
        if spec.kind == "perf" and spec.device == device.split(":")[0]:
            found.append(spec)
    for spec in sorted(found, key=lambda s: (s.name not in PREFERRED, s.name)):
        return spec.root
    return None


def run_to_run_section(device: str, runs: int, *, task: Path | None = None, config: ScoreConfig | None = None,
                       say: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    task = task or pick_task(device)
    if task is None:
        return {"skipped": f"no shipped perf task for {device}"}
    cfg = dataclasses.replace(config or ScoreConfig(device=device), stop_early=False,   # the CIs are what it compares
                              s_ref_policy="table")   # (no solution timed: its s_ref is not what it reads)
    rows = []
    for i in range(runs):
        say(f"selfcheck: run-to-run {i + 1}/{runs} ({task.name})")
        r = score(task, task / "solution.py", cfg)
        if r.comparison is None:
            return {"task": task.name, "failed": f"{r.reasons[0].code}: {r.reasons[0].message}"}
        st = r.comparison.summary.stability
        rows.append({"speedup": r.comparison.speedup, "ci": list(r.comparison.ci),
                     "unstable": bool(st and st.unstable)})
    med = statistics.median(x["speedup"] for x in rows)
    honest = sum(1 for x in rows if x["unstable"] or x["ci"][0] <= med <= x["ci"][1])
    return {"task": task.name, "runs": rows, "median": med,
            "spread": max(x["speedup"] for x in rows) / min(x["speedup"] for x in rows),
            "mean_ci_half_width": statistics.mean(0.5 * math.log(x["ci"][1] / x["ci"][0]) for x in rows),
            "honest_runs": honest}
