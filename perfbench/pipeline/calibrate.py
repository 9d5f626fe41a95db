"""`calibrate(tasks)`: measure each task's s_ref on this machine and write bench_configs/;
`calibrate_plan(plan)`: the same driven by a plan file (calibrate/*.toml), with the starter, an
A/A noise floor and the validity verdict per task, written after every task and resumed.

s_ref is the task solution's speedup over its baseline, measured with the same scorer that
grades candidates (workers, gate, AB-BA), so a candidate matching the solution earns R_perf ~ 0
on this hardware.
"""
from __future__ import annotations

import ast
import dataclasses
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..core.crossover import PROTOCOL_VERSION
from ..core.errors import UsageError
from ..core.verdict import VERDICT_REJECTED
from ..device.check import check_device
from ..device.fingerprint import describe_cpu, fingerprint
from ..task import bench_configs
from ..task.spec import TaskSpec, load_task, require_solution
from ..task.timed_files import timed_files_digest
from .calibration_plan import CalibrationPlan
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
    extra: tuple[tuple[str, object], ...] = ()   # a plan's findings (starter, noise floor, validity, ...)
    baseline_ns: tuple[float, ...] = ()   # the baseline's median ns per call, per run (bench_configs.baseline_drift)
    task_files: str = ""                  # the task's timed_files_digest when it was measured


def calibrate(tasks: list[Path], config: ScoreConfig | None = None, *, out_dir: Path | None = None,
              runs: int = 3, log: Callable[[str], None] | None = None) -> tuple[list[Path], list[Calibration]]:
    """Score each task's solution against its baseline; merge the results into this device's
    file (one per CPU thread count among the tasks).  Returns the files written and the entries."""
    cfg = config or ScoreConfig()
    say = log or (lambda msg: None)
    found: list[Calibration] = []
    by_key: dict[str, list[Calibration]] = {}
    for path in tasks:
        spec = require_solution(load_task(path), "calibrate")
        if spec.kind != "perf":
            say(f"{spec.name}: impl task, no s_ref to measure")
            continue
        device = check_device(cfg.device or spec.device)
        entry = _measure_solution(spec, cfg, runs, say)
        found.append(entry)
        by_key.setdefault(bench_configs.device_key(device, fingerprint(device), spec.threads), []).append(entry)
    if not found:
        raise UsageError("no perf tasks to calibrate")
    return [bench_configs.write(key, entries, out_dir) for key, entries in by_key.items()], found


def _measure_solution(spec, cfg: ScoreConfig, runs: int, say: Callable[[str], None],
                      before_run: Callable[[int], None] | None = None) -> Calibration:
    speedups, lows, highs, pairs, baseline_ns = [], [], [], 0, []
    files = timed_files_digest(spec)   # before the runs: what they measure
    for run in range(runs):
        if before_run is not None:
            before_run(run)
        else:
            say(f"{spec.name}: timing the solution against the baseline (run {run + 1}/{runs})")
        # any s_ref > 1 lets score() run; the value measured here replaces it
        r = score(spec, spec.file("solution"), dataclasses.replace(cfg, s_ref=2.0, stop_early=False), log=say)
        if r.verdict == VERDICT_REJECTED:
            raise UsageError(f"{spec.name}: the task's own solution was rejected: "
                             f"{r.reasons[0].code}: {r.reasons[0].message}")
        speedups.append(r.comparison.speedup)
        lows.append(r.comparison.ci[0])
        highs.append(r.comparison.ci[1])
        pairs += r.comparison.samples.n_pairs
        baseline_ns.append(statistics.median(r.comparison.samples.baseline_ns))
    return Calibration(spec.name, statistics.median(speedups), min(lows), max(highs), pairs, tuple(speedups),
                       baseline_ns=tuple(baseline_ns), task_files=files)


def _side_speedup(spec, file: Path, cfg: ScoreConfig, say: Callable[[str], None]) -> tuple[list[float] | None, str]:
    """[speedup, ci_low, ci_high] of `file` against the baseline, or None and why it was rejected."""
    r = score(spec, file, dataclasses.replace(cfg, s_ref=2.0, stop_early=False), log=say)
    if r.verdict == VERDICT_REJECTED:
        return None, f"{r.reasons[0].code}: {r.reasons[0].message}"
    return [round(r.comparison.speedup, 4), round(r.comparison.ci[0], 4), round(r.comparison.ci[1], 4)], ""


def validity(plan: CalibrationPlan, entry: Calibration, starter: list[float] | None, starter_why: str,
             aa: list[float] | None, previous: dict | None = None) -> tuple[str, ...]:
    """Why a task is invalid on this device (empty: valid).  Pure.  `previous`: the entry this
    device's file held before (its s_ref, ci and date), if any."""
    why = []
    if entry.s_ref < plan.min_s_ref:
        why.append(f"s_ref {entry.s_ref:.3f} is below {plan.min_s_ref:g}")
    spread = (max(entry.runs) - min(entry.runs)) / entry.s_ref if entry.runs else 0.0
    if spread > plan.max_spread:
        why.append(f"unstable: runs {min(entry.runs):.3f}..{max(entry.runs):.3f} differ by {spread:.0%} "
                   f"(more than {plan.max_spread:.0%})")
    moved = _moved(previous, entry)
    if moved:
        why.append(moved)
    if starter_why:
        why.append(f"the starter is rejected ({starter_why})")
    elif starter is not None and starter[1] >= entry.s_ref:
        why.append(f"the starter already reaches s_ref (speedup {starter[0]:.3f}, CI from {starter[1]:.3f})")
    if aa is not None and entry.s_ref > 1.0:
        reach = max(aa[2], 1.0 / aa[1])        # how far from 1 the A/A CI goes, either way (a factor)
        moves_r = math.log(reach) / math.log(entry.s_ref)
        if moves_r > plan.max_noise_r:
            why.append(f"the baseline against itself reads {aa[0]:.3f} [{aa[1]:.3f}, {aa[2]:.3f}]: a noise floor of "
                       f"{reach - 1:.1%} moves R_perf by up to {moves_r:.2f} at s_ref {entry.s_ref:.2f} "
                       f"(more than {plan.max_noise_r:g})")
    return tuple(why)


def _moved(previous: dict | None, entry: Calibration) -> str | None:
    """Why the new measurement disagrees with the device's previous one: their intervals (each
    spanning its runs' CIs) do not overlap.  A task whose s_ref does not reproduce on this device
    cannot be scored against either value."""
    try:
        then, (lo, hi) = float(previous["s_ref"]), (float(x) for x in previous["ci"])
    except (TypeError, KeyError, ValueError):
        return None   # no previous entry, or one without an interval
    if lo <= entry.ci_high and entry.ci_low <= hi:
        return None
    return (f"not reproducible: s_ref {then:.3f} [{lo:.3f}, {hi:.3f}] when calibrated on "
            f"{previous.get('measured', 'an earlier run')}, {entry.s_ref:.3f} [{entry.ci_low:.3f}, "
            f"{entry.ci_high:.3f}] now")


def calibrate_plan(plan: CalibrationPlan, config: ScoreConfig | None = None, *, out_dir: Path | None = None,
                   log: Callable[[str], None] | None = None, remeasure: bool = False) -> tuple[list[Path], list[Calibration]]:
    """Run `plan` on this machine.  Each task's entry (s_ref and CI, the starter's speedup, the
    A/A noise floor, valid or why not, the plan and clock policy) is written as soon as the task
    is done; a task this plan (same file contents) already measured on this device is kept, so
    an interrupted run resumes where it stopped; `remeasure` measures every task again.  A new
    measurement whose interval misses the one it replaces marks the task invalid (`_moved`)."""
    from ..device.clocks import ClockRequest
    cfg = dataclasses.replace(config or ScoreConfig(), device=(config.device if config else None) or plan.device,
                              clocks=ClockRequest(plan.clocks))
    if plan.pairs is not None:
        cfg = dataclasses.replace(cfg, sampler=dataclasses.replace(cfg.sampler, min_pairs=plan.pairs,
                                                                   max_pairs=max(plan.pairs, cfg.sampler.max_pairs)))
    say = log or (lambda msg: None)
    device = check_device(cfg.device)
    fp = fingerprint(device)
    tag = f"{plan.name}:{plan.digest}"
    specs = [require_solution(load_task(t), "calibrate") for t in plan.tasks]
    before = {s.name: _comparable(bench_configs.entry(s.name, bench_configs.device_key(device, fp, s.threads),
                                                      out_dir), timed_files_digest(s))
              for s in specs if s.kind == "perf"}
    todo = [s for s in specs if s.kind == "perf" and (remeasure or (before[s.name] or {}).get("plan") != tag)]
    def starter_is_baseline(spec: TaskSpec) -> bool:
        # The same program as the baseline: its scoring against the baseline *is* the A/A one.
        return plan.starter and plan.noise_floor and same_program(spec.file("starter"), spec.file("baseline"))

    progress = _Progress(sum(plan.runs + (plan.starter and not starter_is_baseline(s)) + plan.noise_floor
                             for s in todo), say)
    paths, found = [], []
    for spec in specs:
        key = bench_configs.device_key(device, fp, spec.threads)
        if spec not in todo:
            say(f"{spec.name}: " + ("impl task, no s_ref to measure" if spec.kind != "perf"
                                     else f"already measured by {plan.name} on {key}: kept"))
            continue
        shared = starter_is_baseline(spec)
        entry, starter, starter_why, aa = _measure_task(spec, plan, cfg, say, progress, shared)
        why = validity(plan, entry, starter, starter_why, aa, before[spec.name])
        extra = [("valid", not why), ("invalid_because", list(why)), ("plan", tag), ("clocks", plan.clocks),
                 ("device_model", _model(fp, device))]
        extra += [("starter", starter)] if starter is not None else []
        extra += [("starter_is_baseline", True)] if shared else []
        extra += [("starter_rejected", starter_why)] if starter_why else []
        extra += [("noise_floor", aa)] if aa is not None else []
        if _moved(before[spec.name], entry):
            extra += [("previous", {k: before[spec.name][k] for k in ("s_ref", "ci", "measured")
                                    if k in before[spec.name]})]
        entry = dataclasses.replace(entry, extra=tuple(extra))
        found.append(entry)
        paths.append(bench_configs.write(key, [entry], out_dir))   # after every task: nothing is lost
        say(f"{spec.name}: s_ref {entry.s_ref:.3f} on {key}: " + ("valid" if not why else "INVALID: " + "; ".join(why)))
    return sorted(set(paths)), found


class _Progress:
    """Calibration's progress line: the scorings done of the plan's total, with an ETA."""

    def __init__(self, total: int, say: Callable[[str], None]) -> None:
        self.total, self.done, self.say, self.started = total, 0, say, time.monotonic()

    def step(self, msg: str) -> None:
        eta = "" if not self.done else \
            f", ETA {_duration((time.monotonic() - self.started) / self.done * (self.total - self.done))}"
        self.say(f"[{self.done}/{self.total} scorings{eta}] {msg}")


def _measure_task(spec: TaskSpec, plan: CalibrationPlan, cfg: ScoreConfig, say: Callable[[str], None],
                  progress: _Progress, shared: bool
                  ) -> tuple[Calibration, list[float] | None, str, list[float] | None]:
    """One task's scorings: the solution's runs, the starter's speedup (or why it was rejected)
    and the baseline against itself, as the plan asks; `shared`: the starter is the baseline's
    program, so the A/A scoring is also the starter's."""
    def before_run(run: int) -> None:
        progress.done += run > 0
        progress.step(f"{spec.name}: solution against baseline, run {run + 1}/{plan.runs}")
    entry = _measure_solution(spec, cfg, plan.runs, say, before_run)
    progress.done += 1
    starter, starter_why, aa = None, "", None
    if plan.starter and spec.file("starter").is_file() and not shared:
        progress.step(f"{spec.name}: starter against baseline")
        starter, starter_why = _side_speedup(spec, spec.file("starter"), cfg, say)
        progress.done += 1
    if plan.noise_floor:
        progress.step(f"{spec.name}: baseline against itself (noise floor" + (", and the starter: the same program)"
                                                                                if shared else ")"))
        aa, _ = _side_speedup(spec, spec.file("baseline"), cfg, say)
        progress.done += 1
        starter = aa if shared else starter
    return entry, starter, starter_why, aa


def _comparable(previous: dict | None, task_files: str) -> dict | None:
    """The device's previous entry for a task, if this measurement protocol measured it on the
    task's timed files as they are now (`task_files`; an entry that records none is taken as
    current).  Any other is neither resumed (it is not this s_ref) nor compared with (a protocol
    or task change may move s_ref; `score` warns of the old entry until it is replaced)."""
    if previous is None or previous.get("protocol", 1) != PROTOCOL_VERSION:
        return None
    if previous.get("task_files", task_files) != task_files:
        return None
    return previous


def same_program(a: Path, b: Path) -> bool:
    """Whether two Python files are the same program (their module docstrings aside)."""
    def body(path: Path) -> str | None:
        try:
            tree = ast.parse(path.read_text())
        except (OSError, SyntaxError, ValueError):
            return None
        if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(getattr(tree.body[0], "value", None),
                                                                           ast.Constant) \
                and isinstance(tree.body[0].value.value, str):
            tree.body = tree.body[1:]
        return ast.dump(tree)
    first = body(a)
    return first is not None and first == body(b)


def _model(fp: dict, device: str) -> str:
    return str(fp.get("cuda", {}).get("name")) if device.startswith("cuda") else describe_cpu(fp.get("host", {}))


def _duration(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s"
