"""Per-hardware s_ref tables (bench_configs/*.toml): find the entry for this device.

A file is named after the device key (e.g. ``cuda-nvidia-h200.toml``, ``cpu-amd-epyc-9554-1t.toml``)
and holds ``[tasks.NAME] s_ref = ...`` entries written by `perfbench calibrate`.  A CPU key ends in
the task's thread count: a speedup measured with one thread says nothing about two.  A CPU whose
name says no part number (a hypervisor's "AMD EPYC") is told apart by its family and model
(``cpu-amd-epyc-f26m2-1t``): behind that one name, sessions here have met hosts where
row_softmax's baseline took 16 ms a call and hosts where it took 8.3 ms.
"""
from __future__ import annotations

import datetime
import math
import os
import re
import statistics
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..core.crossover import PROTOCOL_VERSION
from ..core.errors import UsageError


# The least drift of the baseline's per-call time that `SRef.baseline_drift` reports: a score's
# own median moves by a few percent between runs on a quiet host (the A/A floors recorded here).
DRIFT_FLOOR = math.log(1.10)


def default_dir() -> Path:
    env = os.environ.get("PERFBENCH_BENCH_CONFIGS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "bench_configs"


def device_key(device: str, fingerprint: dict, threads: int | None = None) -> str:
    if device.startswith("cuda"):
        name = fingerprint.get("cuda", {}).get("name", "unknown-gpu")
        prefix = "cuda"
    else:
        host = fingerprint.get("host", {})
        name = host.get("cpu_model", "unknown-cpu")
        prefix = "cpu"
    name = re.sub(r"\((r|tm)\)|cpu|@.*$|processor", "", name.lower())
    slug = re.sub(r"[^a-z0-9]+", "-", name).strip("-")
    if prefix == "cpu" and not re.search(r"\d", slug):   # no part number: name the generation
        family, model = host.get("cpu_family"), host.get("cpu_model_number")
        if model is not None:
            slug += f"-f{family}m{model}" if family is not None else f"-p{model:x}"
    suffix = f"-{threads}t" if prefix == "cpu" and threads is not None else ""
    return f"{prefix}-{slug}{suffix}"


# Where a score's s_ref comes from when no number is given (ScoreConfig.s_ref_policy, --s-ref):
# `table`: bench_configs, else the task's default; `live`: the task's solution timed in the same
# run (verdict.S_REF_LIVE); `auto`: a fresh bench_configs entry, else live (docs/verdict.md).
S_REF_AUTO, S_REF_LIVE_POLICY, S_REF_TABLE = "auto", "live", "table"
S_REF_POLICIES = (S_REF_AUTO, S_REF_LIVE_POLICY, S_REF_TABLE)
# An entry is fresh on the UTC day it was measured: a calibration carried to the next day on
# another VM of the same class read 3.36 where the solution scored 2.62-3.01 (#38).
FRESH_DAYS_AFTER = 0   # days after the day of measurement that an entry stays fresh


def s_ref_choice(value: str) -> tuple[float | None, str]:
    """`--s-ref VALUE` as (a number or None, the policy): NUMBER | auto | live | table; a
    one-line UsageError otherwise."""
    if value in S_REF_POLICIES:
        return None, value
    try:
        return float(value), S_REF_AUTO
    except ValueError:
        raise UsageError(f"--s-ref: expected a number > 1 or one of {'|'.join(S_REF_POLICIES)}, got {value!r}") from None


@dataclass(frozen=True)
class SRef:
    value: float
    source: str       # where it came from, for the result and the report
    invalid: tuple[str, ...] = ()   # why calibration marked the task invalid on this device
    protocol: int = PROTOCOL_VERSION   # the measurement protocol it was measured with (none recorded: 1)
    measured_by: str = ""              # "perfbench VERSION, DATE"
    baseline_ns: tuple[float, ...] = ()   # the baseline's ns per call in each calibration run (none recorded: ())
    measured: str = ""                    # the UTC date it was measured (YYYY-MM-DD; none recorded: "")
    task_files: str = ""                  # timed_files_digest of the task it measured (none recorded: "")

    def stale(self, today: datetime.date, task_files: str = "") -> str | None:
        """Why this entry is not fresh on `today` for the task whose timed files digest to
        `task_files` (so `auto` measures s_ref live), or None."""
        if self.invalid:
            return f"it marks the task invalid here ({'; '.join(self.invalid)})"
        if self.protocol != PROTOCOL_VERSION:
            return f"it was measured by protocol {self.protocol}, this score runs {PROTOCOL_VERSION}"
        if self.other_task_files(task_files):
            return "it was measured on other versions of the task's timed files"
        try:
            day = datetime.date.fromisoformat(self.measured)
        except ValueError:
            return "it records no date"
        if (today - day).days > FRESH_DAYS_AFTER:
            return f"it was measured on {self.measured}, and an s_ref is fresh only on its own day"
        return None

    def baseline_drift(self, now_ns: float) -> str | None:
        """A warning when the baseline's ns per call in this score is further from the
        calibration's median than the calibration's own runs were from each other (at least
        DRIFT_FLOOR): then this may not be the host s_ref was measured on, whatever its key
        says.  A hint, not proof: on a 2-core VM whose memory bandwidth swings, the baseline
        moves between scores minutes apart while the speedup holds (benchmarks/results/timing.md, "A
        baseline that drifts while the speedup holds").  None where it is not, or where no per-call time was recorded (entries
        written before perfbench 0.2.0's #38 work)."""
        if not self.baseline_ns or not now_ns > 0:
            return None
        lo, hi = min(self.baseline_ns), max(self.baseline_ns)
        ref = statistics.median(self.baseline_ns)
        allowed = max(math.log(hi / lo), DRIFT_FLOOR)
        if abs(math.log(now_ns / ref)) <= allowed:
            return None
        return (f"baseline_drift: the baseline takes {now_ns / 1e6:.3f} ms a call here; when {self.source} was "
                f"calibrated ({self.measured_by}) it took {lo / 1e6:.3f}-{hi / 1e6:.3f} ms. This may be another host "
                "than the one s_ref was measured on (or one whose memory bandwidth swings), and R_perf then "
                "measured against a stale s_ref: run `perfbench calibrate` here, or pass --s-ref live")

    def other_task_files(self, task_files: str) -> str | None:
        """Why this s_ref may not be the task's as it is now (`task_files`: its digest), or None
        (also where either digest is unknown: entries from before perfbench 0.2.0's digests)."""
        if not self.task_files or not task_files or self.task_files == task_files:
            return None
        return (f"{self.source}'s s_ref was measured ({self.measured_by}) on other versions of the task's timed "
                f"files (task.toml, inputs, baseline, solution or its shared sources: digest {self.task_files}, "
                f"now {task_files}): R_perf may be off by what that changed; run `perfbench calibrate` again")

    @property
    def other_protocol(self) -> str | None:
        """Why this s_ref may not be comparable with a score of this perfbench, or None."""
        if self.protocol == PROTOCOL_VERSION:
            return None
        return (f"{self.source}'s s_ref was measured by protocol {self.protocol} ({self.measured_by}); this score "
                f"runs protocol {PROTOCOL_VERSION} (docs/verdict.md, \"Pair order and the period effect\"): R_perf "
                "may be off by the difference; run `perfbench calibrate` on this machine")


def lookup(task: str, key: str, directory: Path | None = None) -> SRef | None:
    path = (directory or default_dir()) / f"{key}.toml"
    found = entry(task, key, directory)
    if found is None:
        return None
    value = found.get("s_ref")
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 1:
        raise UsageError(f"{path}: [tasks.{task}] s_ref must be a number > 1, got {value!r}")
    invalid = () if found.get("valid", True) else tuple(found.get("invalid_because", ["marked invalid"]))
    protocol = found.get("protocol", 1)
    if not isinstance(protocol, int) or isinstance(protocol, bool) or protocol < 1:
        raise UsageError(f"{path}: [tasks.{task}] protocol must be an integer >= 1, got {protocol!r}")
    baseline_ns = found.get("baseline_ns", [])
    if not isinstance(baseline_ns, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0
                                                    for x in baseline_ns):
        raise UsageError(f"{path}: [tasks.{task}] baseline_ns must be a list of times > 0 (ns), got {baseline_ns!r}")
    task_files = found.get("task_files", "")
    if not isinstance(task_files, str):
        raise UsageError(f"{path}: [tasks.{task}] task_files must be a string (a digest), got {task_files!r}")
    return SRef(float(value), f"bench_configs/{path.name}", invalid, protocol,
                f"perfbench {found.get('perfbench', '?')}, {found.get('measured', '?')}",
                tuple(float(x) for x in baseline_ns), str(found.get("measured", "")), task_files)


def entry(task: str, key: str, directory: Path | None = None) -> dict | None:
    """The raw [tasks.TASK] table of KEY.toml (None when there is none)."""
    path = (directory or default_dir()) / f"{key}.toml"
    if not path.is_file():
        return None
    try:
        found = tomllib.loads(path.read_text()).get("tasks", {}).get(task)
        return None if found is None else dict(found)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None


def write(key: str, entries: list, directory: Path | None = None) -> Path:
    """Merge calibration entries (task, s_ref, ci_low, ci_high, n_pairs, runs) into KEY.toml.

    Entries for other tasks already in the file are kept.  Written atomically.
    """
    import datetime

    from ..core.version import __version__

    d = directory or default_dir()
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{key}.toml"
    tasks: dict[str, dict] = {}
    if path.is_file():
        try:
            tasks = dict(tomllib.loads(path.read_text()).get("tasks", {}))
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path}: invalid TOML: {exc}") from None
    today = datetime.date.today().isoformat()
    for e in entries:
        tasks[e.task] = {"s_ref": round(e.s_ref, 4), "ci": [round(e.ci_low, 4), round(e.ci_high, 4)],
                         "runs": [round(x, 4) for x in e.runs], "pairs": e.n_pairs, "measured": today,
                         "perfbench": __version__, "protocol": PROTOCOL_VERSION, **dict(getattr(e, "extra", ())),
                         **({"baseline_ns": [round(x, 1) for x in e.baseline_ns]} if getattr(e, "baseline_ns", ())
                            else {}),
                         **({"task_files": e.task_files} if getattr(e, "task_files", "") else {})}
    lines = [f"# s_ref per task on {key}, written by `perfbench calibrate`.", f'device = "{key}"', ""]
    for name in sorted(tasks):
        t = tasks[name]
        lines.append(f"[tasks.{name}]")
        for k, v in t.items():
            lines.append(f"{k} = {_toml_value(v)}")
        lines.append("")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines))
    tmp.replace(path)
    return path


def _toml_value(v) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):   # an inline table; keys are bare words (s_ref, ci, measured)
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)
