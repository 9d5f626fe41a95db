"""Calibration plans as data (calibrate/cpu.toml, calibrate/gpu.toml): which tasks, how many
runs and pairs, the clock policy, and the validity thresholds a task's s_ref must meet on a
device.  Parsed once, validated field by field (a mistake names the file and the field)."""
from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UsageError
from ..core.scoring import MAX_NOISE_R

_FIELDS = {"description", "device", "tasks", "runs", "pairs", "clocks", "starter", "noise_floor", "min_s_ref",
           "max_spread", "max_noise_r"}


@dataclass(frozen=True)
class CalibrationPlan:
    name: str                      # the file's stem: entries record which plan measured them
    digest: str                    # of the file's text: a changed plan re-measures (no stale resume)
    device: str                    # cpu | cuda
    tasks: tuple[Path, ...]        # resolved against the plan file's directory
    runs: int = 3                  # solution-vs-baseline scorings per task; s_ref is their median
    pairs: int | None = None       # minimum AB-BA pairs per scoring (None: the scorer's default)
    clocks: str = "base"           # GPU clock policy (perfbench score --clocks)
    starter: bool = True           # also score the starter against the baseline
    noise_floor: bool = True       # also score the baseline against itself (A/A)
    min_s_ref: float = 1.15        # below: the task is invalid on this device
    max_spread: float = 0.15       # (max - min) / median of the runs' s_ref above: unstable, invalid
    # How far the A/A CI reaches from 1, carried into R_perf at this s_ref (ln(1 + reach) /
    # ln(s_ref)), may be at most this: the noise floor must not move the published number by more.
    # (Not "the A/A CI contains 1": with 180 pairs a 1% layout difference between two worker
    # processes excludes 1, and a correct 95% CI excludes it in 1 task in 20 by chance alone.)
    max_noise_r: float = MAX_NOISE_R
    description: str = ""

    @classmethod
    def load(cls, path: Path) -> "CalibrationPlan":
        try:
            text = path.read_text()
            doc = tomllib.loads(text)
        except OSError as exc:
            raise UsageError(f"--plan {path}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path}: invalid TOML: {exc}") from None
        unknown = sorted(set(doc) - _FIELDS)
        if unknown:
            raise UsageError(f"{path}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(_FIELDS))})")

        def want(name: str, kind: type | tuple, default=None, check=lambda v: True, expected: str = ""):
            value = doc.get(name, default)
            if value is None and default is None:
                return None
            if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool or not check(value):
                raise UsageError(f"{path}: {name} = {value!r}: expected {expected or getattr(kind, '__name__', kind)}")
            return value

        device = want("device", str, "cpu", lambda v: v in ("cpu", "cuda"), "cpu or cuda")
        tasks = want("tasks", list, [], lambda v: v and all(isinstance(t, str) for t in v), "a non-empty list of task directories")
        resolved = tuple((path.parent / t).resolve() for t in tasks)
        for t, r in zip(tasks, resolved):
            if not (r / "task.toml").is_file():
                raise UsageError(f"{path}: tasks: {t}: no task.toml there")
        return cls(name=path.stem, digest=hashlib.sha256(text.encode()).hexdigest()[:12], device=device,
                   tasks=resolved,
                   runs=want("runs", int, 3, lambda v: 1 <= v <= 50, "an integer in 1..50"),
                   pairs=want("pairs", int, None, lambda v: v >= 5, "an integer >= 5"),
                   clocks=want("clocks", str, "base"),
                   starter=want("starter", bool, True), noise_floor=want("noise_floor", bool, True),
                   min_s_ref=float(want("min_s_ref", (int, float), 1.15, lambda v: v > 1, "a number > 1")),
                   max_spread=float(want("max_spread", (int, float), 0.15, lambda v: v > 0, "a number > 0")),
                   max_noise_r=float(want("max_noise_r", (int, float), MAX_NOISE_R, lambda v: 0 < v <= 1, "a number in (0, 1]")),
                   description=want("description", str, ""))
