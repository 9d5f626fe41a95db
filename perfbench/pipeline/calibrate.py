"""`calibrate(tasks)`: measure each task's s_ref on this machine and write bench_configs/.

s_ref is the task solution's speedup over its baseline, measured with the same scorer that
grades candidates (workers, gate, AB-BA), so a candidate matching the solution earns R_perf ~ 0
on this hardware.
"""
from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import bench_configs
from ..device.fingerprint import fingerprint
from ..errors import UsageError
from ..results import VERDICT_REJECTED
from ..tasks import load_task
from .compare import check_device
from .score import ScoreConfig, score


@dataclass(frozen=True)
class Calibration:
    """s_ref = the median over independent runs (fresh workers each); the interval spans every
    run's CI, because on a shared machine the spread between runs exceeds one run's CI."""

    task: str
    s_ref: float
    ci_low: float
    ci_high: float
    n_pairs: int
    runs: tuple[float, ...] = ()


def calibrate(tasks: list[Path], config: ScoreConfig | None = None, *, out_dir: Path | None = None,
              runs: int = 3, log: Callable[[str], None] | None = None) -> tuple[list[Path], list[Calibration]]:
    """Score each task's solution against its baseline; merge the results into this device's
    file (one per CPU thread count among the tasks).  Returns the files written and the entries."""
    cfg = config or ScoreConfig()
    say = log or (lambda msg: None)
    found: list[Calibration] = []
    by_key: dict[str, list[Calibration]] = {}
    for path in tasks:
        spec = load_task(path)
        if spec.kind != "perf":
            say(f"{spec.name}: impl task, no s_ref to measure")
            continue
        device = check_device(cfg.device or spec.device)
        speedups, lows, highs, pairs = [], [], [], 0
        for run in range(runs):
            say(f"{spec.name}: timing the solution against the baseline (run {run + 1}/{runs})")
            # any s_ref > 1 lets score() run; the value measured here replaces it
            r = score(spec, spec.file("solution"), dataclasses.replace(cfg, s_ref=2.0), log=say)
            if r.verdict == VERDICT_REJECTED:
                raise UsageError(f"{spec.name}: the task's own solution was rejected: "
                                 f"{r.reasons[0].code}: {r.reasons[0].message}")
            speedups.append(r.comparison.speedup)
            lows.append(r.comparison.ci[0])
            highs.append(r.comparison.ci[1])
            pairs += r.comparison.samples.n_pairs
        entry = Calibration(spec.name, statistics.median(speedups), min(lows), max(highs), pairs, tuple(speedups))
        found.append(entry)
        by_key.setdefault(bench_configs.device_key(device, fingerprint(device), spec.threads), []).append(entry)
    if not found:
        raise UsageError("no perf tasks to calibrate")
    return [bench_configs.write(key, entries, out_dir) for key, entries in by_key.items()], found
