"""`calibrate(tasks)`: measure each task's s_ref on this machine and write bench_configs/.

s_ref is the task solution's speedup over its baseline, measured with the same scorer that
grades candidates (workers, gate, AB-BA), so a candidate matching the solution earns R_perf ~ 0
on this hardware.
"""
from __future__ import annotations

import dataclasses
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
    task: str
    s_ref: float
    ci_low: float
    ci_high: float
    n_pairs: int


def calibrate(tasks: list[Path], config: ScoreConfig | None = None, *, out_dir: Path | None = None,
              log: Callable[[str], None] | None = None) -> tuple[Path, list[Calibration]]:
    """Score each task's solution against its baseline; merge the results into this device's file."""
    cfg = config or ScoreConfig()
    say = log or (lambda msg: None)
    found: list[Calibration] = []
    device = None
    for path in tasks:
        spec = load_task(path)
        if spec.kind != "perf":
            say(f"{spec.name}: impl task, no s_ref to measure")
            continue
        device = check_device(cfg.device or spec.device)
        say(f"{spec.name}: timing the solution against the baseline")
        # any s_ref > 1 lets score() run; the value measured here replaces it
        r = score(spec, spec.file("solution"), dataclasses.replace(cfg, s_ref=2.0), log=say)
        if r.verdict == VERDICT_REJECTED:
            raise UsageError(f"{spec.name}: the task's own solution was rejected: "
                             f"{r.reasons[0].code}: {r.reasons[0].message}")
        lo, hi = r.comparison.ci
        found.append(Calibration(spec.name, r.comparison.speedup, lo, hi, r.comparison.samples.n_pairs))
    if device is None:
        raise UsageError("no perf tasks to calibrate")
    key = bench_configs.device_key(device, fingerprint(device))
    path = bench_configs.write(key, found, out_dir)
    return path, found
