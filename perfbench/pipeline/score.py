"""`score(task, candidate)`: the correctness gate, then AB-BA timing against the baseline.

The candidate and the baseline each run in their own worker process; this process holds the
secret seeds, regenerates inputs, runs the trusted reference and computes every verdict
(score_processes.py).

This module imports no torch.  On the CPU, `score` spawns both sides' zygotes (each imports
torch, ~1 s of CPU) before it imports the torch-using pipeline itself, so the three imports
share the machine's cores instead of the zygotes' starting only after the scorer's.
"""
from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..system import heap
from ..core.deadline import Deadline, default_seconds
from ..core.errors import UsageError
from ..core.verdict import VERDICT_SCORED, ScoreResult
from ..core.score_key import ScoreKey
from ..device import lease as device_lease
from ..device.check import check_device
from ..isolation.processes.cpu_threads import CpuThreading
from ..task.impl_tests import run_tests
from ..task import solexec_solution
from ..task.spec import FORMAT_SOLEXEC, TaskSpec, load_task
from ..timing.sampler import ProgressFn
from .config import PerfJob, ScoreConfig
from .sandboxes import start_scorer

if TYPE_CHECKING:
    from ..isolation.processes.warm_parent_handle import WarmParents
    from .baseline_pool import BaselinePool

__all__ = ["ScoreConfig", "score"]


def score(task: str | Path | TaskSpec, candidate: str | Path, config: ScoreConfig | None = None,
          *, overrides: dict[str, str] | None = None, progress: ProgressFn | None = None,
          log: Callable[[str], None] | None = None, baselines: BaselinePool | None = None,
          warm_parents: WarmParents | None = None, entry_point: str | None = None,
          destination_passing: bool = False) -> ScoreResult:
    """Gate `candidate` on `task`, then time it against the task's baseline.  `baselines` keeps
    the baseline's workers for the next score of the same task, `warm_parents` the process the
    zygotes are forked from (score-batch).  A SOL-ExecBench problem's candidate is a
    solution.json, or a source file whose function `entry_point` names ("file::function"),
    called destination-passing if so said."""
    cfg = config or ScoreConfig()
    spec = task if isinstance(task, TaskSpec) else load_task(task, overrides)
    device = check_device(cfg.device or spec.device)
    cand_path = Path(candidate)
    if not cand_path.is_file():
        raise UsageError(f"{candidate}: no such file")
    if spec.format != FORMAT_SOLEXEC and (entry_point is not None or destination_passing):
        raise UsageError("--entry-point and --dps are for SOL-ExecBench problems; a task names its own entry point")
    key = ScoreKey.from_seed(cfg.seed) if cfg.seed is not None else ScoreKey.fresh()
    say = log or (lambda msg: None)
    if spec.kind == "impl":
        return _score_impl(spec, cand_path, device, key.timing, cfg, say)
    # Held for the whole run: no other perfbench measurement shares these cores or this GPU.
    with contextlib.ExitStack() as held:
        if spec.format == FORMAT_SOLEXEC:
            sources = Path(held.enter_context(tempfile.TemporaryDirectory(prefix="perfbench-solution-")))
            solution = solexec_solution.read(cand_path, entry_point, destination_passing, sources)
            solution.check_runs(cand_path)
            held.enter_context(solution.environment(device))
            spec, cand_path = solexec_solution.bind(spec, solution), solution.file
        lease = held.enter_context(device_lease.acquire(device, spec.threads, waiting=say))
        # From here, not before the lease: waiting for another score is not the candidate's time.
        deadline = Deadline.start(cfg.deadline_s or default_seconds(
            cfg.load_timeout_s, cfg.sampler.time_budget_s, len(spec.benchmarks)))
        threading = CpuThreading.for_task(spec.threads, spec.omp_wait_policy, lease.cpus) if device == "cpu" else None
        start = start_scorer(spec, device, cand_path, cfg, threading, baseline=baselines is None,
                             parents=warm_parents)
        for server in start.servers.values():
            held.enter_context(server)
        # This process's inputs and float64 oracles between blocks: no page fault per 4 KiB.
        held.enter_context(heap.scorer_heap())
        # Imported here, not above: importing torch takes this process ~1 s, which the zygotes'
        # own imports now overlap.
        from .score_processes import score_perf

        result = score_perf(PerfJob(spec, cand_path, device, key, cfg, deadline), start, say, progress=progress,
                            baselines=baselines)
        # (a solution.json's sources were written elsewhere: the verdict names the file given)
        return result if str(cand_path) == str(candidate) else dataclasses.replace(result, candidate=str(candidate))


def _score_impl(spec: TaskSpec, cand_path: Path, device: str, master: int, cfg: ScoreConfig,
                say: Callable[[str], None]) -> ScoreResult:
    """Implementation tasks: R_impl = 1 iff every test in the task's tests/ passes."""
    say(f"running {spec.name}'s tests against the candidate")
    run = run_tests(spec.tests_dir, cand_path, spec.entry_point, timeout_s=cfg.load_timeout_s)
    warnings = tuple(f"failed: {name}" for name in run.failed_names)
    return ScoreResult(task=spec.name, task_kind="impl", candidate=str(cand_path), device=device,
                       verdict=VERDICT_SCORED, reasons=(), checks=run.total, seed=master,
                       tests_passed=run.passed, tests_total=run.total, warnings=warnings,
                       worker_logs={"tests": run.output_tail})
