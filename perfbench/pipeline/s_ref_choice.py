"""Where a score's s_ref comes from: the command line, a fresh bench_configs entry, the task's
solution timed live, or the task's default (docs/verdict.md, "s_ref")."""
from __future__ import annotations

import datetime

from ..core.errors import UsageError
from ..core.verdict import S_REF_LIVE
from ..task import bench_configs
from ..task.spec import FORMAT_DIR, FORMAT_GPUMODE, FORMAT_KERNELBENCH, FORMAT_SOLEXEC, TaskSpec
from ..task.timed_files import timed_files_digest
from .config import ScoreConfig

# Public benchmarks' problems: no solution of their own, so no s_ref unless one is given or calibrated.
PROBLEM_FORMATS = (FORMAT_KERNELBENCH, FORMAT_GPUMODE, FORMAT_SOLEXEC)


def choose_s_ref(spec: TaskSpec, device: str, fp: dict, cfg: ScoreConfig, today: datetime.date | None = None
                 ) -> tuple[float | None, str, list[str], bench_configs.SRef | None]:
    """s_ref, where it came from, warnings about it, and the bench_configs entry it came from.
    Live, the value is None here: the score derives it from the solution's samples."""
    if cfg.s_ref is not None:
        return cfg.s_ref, "command line", [], None
    policy = cfg.s_ref_policy
    if policy == bench_configs.S_REF_LIVE_POLICY:
        if spec.format != FORMAT_DIR:
            raise UsageError(f"{spec.name}: --s-ref live times the task's solution.py; a {spec.format} problem has none")
        return None, S_REF_LIVE, [], None
    key = bench_configs.device_key(device, fp, spec.threads)
    found = bench_configs.lookup(spec.name, key, cfg.bench_configs_dir)
    files = timed_files_digest(spec)
    stale = found.stale(today or datetime.datetime.now(datetime.timezone.utc).date(), files) if found is not None else None
    if policy == bench_configs.S_REF_AUTO and spec.format == FORMAT_DIR and (found is None or stale):
        # (no warning where nothing was found: live is what an s_ref from another machine would need)
        return None, S_REF_LIVE, [f"{found.source}'s s_ref for {spec.name} is not fresh: {stale}; s_ref is "
                                  "measured live instead (docs/verdict.md)"] if found is not None else [], None
    if found is not None:
        warnings = [f"{found.source} marks {spec.name} invalid on {key} ({'; '.join(found.invalid)}): R_perf "
                    "here does not measure what the task intends"] if found.invalid else []
        warnings += [w for w in (found.other_protocol, found.other_task_files(files)) if w]
        return found.value, found.source, warnings, found
    if spec.s_ref_default is not None:
        return spec.s_ref_default, "task default", [
            f"no bench_configs entry for {spec.name} on {key}: using the task's default s_ref="
            f"{spec.s_ref_default:g}; run `perfbench calibrate` on this machine for a measured one"], None
    if spec.format in PROBLEM_FORMATS:   # a problem: the speedup is the answer
        return None, "none", [f"no s_ref for {spec.name} on {key}: the speedup is scored, R_perf is null; "
                              "pass --s-ref, or add a bench_configs entry under its name, for a reward"], None
    raise UsageError(f"{spec.name}: no s_ref for {key} in bench_configs and no task default; pass --s-ref")
