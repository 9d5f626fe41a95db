"""One benchmark's result in a pytest run, and the pytest-benchmark JSON layout it is written in
(so dashboards and CI actions that read pytest-benchmark output read ours), with perfbench's
own fields (raw samples, the paired comparison, the verdict) under `extra_info.perfbench`."""
from __future__ import annotations

import datetime
import platform
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..core.version import __version__
from .judge import Judgement
from .store import STORE_SCHEMA

SINGLE, PAIRED, AGAINST = "single", "paired", "against"
KINDS = (SINGLE, PAIRED, AGAINST)


@dataclass(frozen=True)
class BenchRecord:
    fullname: str                       # the test's node id
    name: str
    kind: str                           # SINGLE: one function timed; PAIRED: baseline vs candidate, AB-BA;
                                        # AGAINST: the function vs its version at a git revision, AB-BA
    samples_ns: tuple[float, ...]       # per-iteration times of the function (the candidate when paired)
    baseline_ns: tuple[float, ...] = ()  # the other side's, paired block by block (PAIRED, AGAINST)
    judgement: Judgement | None = None  # against the baseline, the revision (paired) or a saved run (unpaired)
    reference: str = ""                 # what it was compared with, for people ("baseline", "main (3f2a..)")
    note: str = ""                      # why there is no comparison, when there is none
    window_s: tuple[float, float] | None = None   # when it was measured (Unix time, start and end)
    processes: tuple[int, ...] = ()     # AGAINST: per pair, which pair of processes measured it
    params: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if len(self.samples_ns) < 2 or min(self.samples_ns) <= 0:
            raise ValueError(f"{self.fullname}: needs at least 2 positive samples")
        if (self.kind != SINGLE) != bool(self.baseline_ns):
            raise ValueError(f"{self.fullname}: baseline samples go with a paired record only")

    def to_dict(self) -> dict[str, Any]:
        """Plain data (what pytest-xdist carries from a worker to the controller)."""
        d = asdict(self)
        d["judgement"] = None if self.judgement is None else self.judgement.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BenchRecord":
        j = d.get("judgement")
        return cls(**{**d, "samples_ns": tuple(d["samples_ns"]), "baseline_ns": tuple(d.get("baseline_ns", ())),
                      "processes": tuple(d.get("processes", ())),
                      "window_s": tuple(d["window_s"]) if d.get("window_s") else None,
                      "judgement": None if j is None else Judgement.from_dict(j)})

    @property
    def median_s(self) -> float:
        return float(np.median(self.samples_ns)) / 1e9


def _stats(samples_ns: tuple[float, ...]) -> dict[str, Any]:
    """pytest-benchmark's `stats` block, in seconds; a round is one timed block (per iteration)."""
    x = np.asarray(samples_ns, float) / 1e9
    q1, median, q3 = (float(v) for v in np.percentile(x, [25, 50, 75]))
    iqr = q3 - q1
    mean, std = float(x.mean()), float(x.std(ddof=1))
    low, high = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    n_iqr, n_std = int(((x < low) | (x > high)).sum()), int((abs(x - mean) > std).sum())
    return {"min": float(x.min()), "max": float(x.max()), "mean": mean, "stddev": std, "rounds": len(x),
            "median": median, "iqr": iqr, "q1": q1, "q3": q3, "iqr_outliers": n_iqr, "stddev_outliers": n_std,
            "outliers": f"{n_std};{n_iqr}",
            "ld15iqr": float(x[x >= low].min()), "hd15iqr": float(x[x <= high].max()),
            "ops": 1.0 / mean, "total": float(x.sum()), "iterations": 1, "data": [float(v) for v in x]}


def _perfbench_info(r: BenchRecord) -> dict[str, Any]:
    info: dict[str, Any] = {"kind": r.kind, "samples_ns": list(r.samples_ns)}
    if r.baseline_ns:
        info["baseline_samples_ns"] = list(r.baseline_ns)
    for key in ("reference", "note"):
        if getattr(r, key):
            info[key] = getattr(r, key)
    if r.processes:
        info["processes"] = list(r.processes)
    if r.window_s is not None:
        info["measured_unix_s"] = list(r.window_s)
    if r.judgement is not None:
        info["comparison"] = {**r.judgement.to_dict(), "summary": r.judgement.describe()}
    return info


def benchmark_document(records: list[BenchRecord], *, machine_key: str, fingerprint: dict[str, Any],
                       malloc: str = "system", commit_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole run in pytest-benchmark's layout (`machine_info`, `commit_info`, `benchmarks`,
    `datetime`, `version`) plus a `perfbench` block (what the saved-run store reads back)."""
    host = fingerprint.get("host", {})
    machine_info = {"node": platform.node(), "processor": platform.processor(), "machine": platform.machine(),
                    "python_implementation": platform.python_implementation(),
                    "python_version": platform.python_version(), "python_compiler": platform.python_compiler(),
                    "release": platform.release(), "system": platform.system(),
                    "cpu": {"brand_raw": host.get("cpu_model"), "count": host.get("cpu_count")}}
    benchmarks = [{"group": None, "name": r.name, "fullname": r.fullname, "params": r.params, "param": None,
                   "extra_info": {"perfbench": _perfbench_info(r)},
                   "options": {"timer": "perfbench", "disable_gc": False, "warmup": True},
                   "stats": _stats(r.samples_ns)} for r in records]
    return {"machine_info": machine_info, "commit_info": commit_info or {}, "benchmarks": benchmarks,
            "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": f"perfbench-{__version__}",
            "perfbench": {"store_schema": STORE_SCHEMA, "machine_key": machine_key, "fingerprint": fingerprint,
                          "malloc": malloc}}
