"""`score(task, candidate)`: the correctness gate, then AB-BA timing against the baseline.

The candidate and the baseline each run in their own worker process; this process holds the
secret seeds, regenerates inputs, runs the trusted reference and computes every verdict.
"""
from __future__ import annotations

import dataclasses
import secrets
from pathlib import Path
from typing import Callable

from .. import bench_configs, tamper
from ..correctness import Failure
from ..device import lease as device_lease
from ..device.fingerprint import fingerprint
from ..errors import CandidateRejected, UsageError
from ..impl_tests import run_tests
from ..isolation.cpu_threads import CpuThreading
from ..results import VERDICT_REJECTED, VERDICT_SCORED, ComparisonResult, PairedSamples, Reason, ScoreResult
from ..task_runtime import TaskProgram
from ..tasks import FORMAT_KERNELBENCH, TaskSpec, load_task
from ..timing.sampler import ProgressFn, SamplerConfig
from ..timing.stopping import StoppingRule, interim_decision
from .baseline_pool import BaselinePool
from .compare import check_device
from .config import ScoreConfig
from .gate import candidate_worker, derive_seeds, gate, load_side
from .timing_run import RunSetup, TimingRun, merge_diagnostics

__all__ = ["ScoreConfig", "score", "gate_only", "gate"]


def _s_ref(spec: TaskSpec, device: str, fp: dict, cfg: ScoreConfig) -> tuple[float | None, str, list[str]]:
    if cfg.s_ref is not None:
        return cfg.s_ref, "command line", []
    key = bench_configs.device_key(device, fp, spec.threads)
    found = bench_configs.lookup(spec.name, key, cfg.bench_configs_dir)
    if found is not None:
        return found.value, found.source, [
            f"{found.source} marks {spec.name} invalid on {key} ({'; '.join(found.invalid)}): R_perf here does "
            "not measure what the task intends"] if found.invalid else []
    if spec.s_ref_default is not None:
        return spec.s_ref_default, "task default", [
            f"no bench_configs entry for {spec.name} on {key}: using the task's default s_ref="
            f"{spec.s_ref_default:g}; run `perfbench calibrate` on this machine for a measured one"]
    if spec.format == FORMAT_KERNELBENCH:   # a problem file: the speedup is the answer (KernelBench's own)
        return None, "none", [f"no s_ref for {spec.name} on {key}: the speedup is scored, R_perf is null; "
                              "pass --s-ref or run `perfbench calibrate` for a reward"]
    raise UsageError(f"{spec.name}: no s_ref for {key} in bench_configs and no task default; pass --s-ref")


def score(task: str | Path | TaskSpec, candidate: str | Path, config: ScoreConfig | None = None,
          *, overrides: dict[str, str] | None = None, progress: ProgressFn | None = None,
          log: Callable[[str], None] | None = None, baselines: BaselinePool | None = None) -> ScoreResult:
    """Gate `candidate` on `task`, then time it against the task's baseline.  `baselines` keeps
    the baseline's workers for the next score of the same task (score-batch)."""
    cfg = config or ScoreConfig()
    spec = task if isinstance(task, TaskSpec) else load_task(task, overrides)
    device = check_device(cfg.device or spec.device)
    cand_path = Path(candidate)
    if not cand_path.is_file():
        raise UsageError(f"{candidate}: no such file")
    master = cfg.seed if cfg.seed is not None else secrets.randbits(62)
    say = log or (lambda msg: None)
    if spec.kind == "impl":
        return _score_impl(spec, cand_path, device, master, cfg, say)
    # Held for the whole run: no other perfbench measurement shares these cores or this GPU.
    with device_lease.acquire(device, spec.threads, waiting=say) as lease:
        return _score_perf(spec, cand_path, device, master, cfg, lease, say, progress, baselines)


def _score_perf(spec: TaskSpec, cand_path: Path, device: str, master: int, cfg: ScoreConfig,
                lease: device_lease.DeviceLease, say: Callable[[str], None], progress: ProgressFn | None,
                baselines: BaselinePool | None) -> ScoreResult:
    init_seed, probe_seed, *check_seeds = derive_seeds(master, 2 + cfg.check_seeds)
    program = TaskProgram(spec, device, init_seed=init_seed)
    fp = fingerprint(device)
    s_ref, s_ref_source, warnings = _s_ref(spec, device, fp, cfg)
    sampler_cfg = _sampler_config(spec, cfg)
    base = dict(task=spec.name, task_kind=spec.kind, candidate=str(cand_path), device=device, seed=master,
                overrides=dict(spec.overrides), s_ref=s_ref, s_ref_source=s_ref_source, warnings=tuple(warnings))
    baseline_file = spec.root if spec.format == FORMAT_KERNELBENCH else spec.file("baseline")
    threading = CpuThreading.for_task(spec.threads, spec.omp_wait_policy, lease.cpus) if device == "cpu" else None
    if threading is not None:
        base["threading"] = threading.to_dict()
        if threading.oversubscribed:
            base["warnings"] += (f"{spec.name} asks for {spec.threads} threads; this process may use only "
                                 f"{len(threading.cpus)} cores, so threads share them",)
    run = TimingRun(RunSetup(spec, program, device, cand_path, baseline_file, cfg, sampler_cfg, threading,
                             init_seed, probe_seed, master), say, progress, baselines)
    rule = StoppingRule(cfg.processes, s_ref, sampler_cfg.confidence, cfg.target_r_ci, sampler_cfg.target_rel_ci)
    decision = None
    try:
        for j in range(cfg.processes):
            rejected = run.process(j, check_seeds, base)
            if rejected is not None:
                return ScoreResult(verdict=VERDICT_REJECTED, reasons=tuple(Reason(f.reason, f.message) for f in rejected),
                                   checks=run.checks, worker_logs=run.logs, **base)
            if cfg.stop_early:
                decision = interim_decision(run.parts, rule, seed=master, n_resamples=sampler_cfg.n_resamples)
            if decision is not None:
                say(f"stopping after {j + 1} of {cfg.processes} processes: {decision}")
                break
    except CandidateRejected as exc:
        return ScoreResult(verdict=VERDICT_REJECTED, reasons=(Reason(exc.reason, exc.message),), checks=run.checks,
                           worker_logs=run.logs, **base)
    finally:
        run.close()
    samples = PairedSamples.concat(run.parts)
    slowdown = tamper.baseline_slowdown(run.before, run.parts[0].baseline_ns)
    if slowdown:
        base["warnings"] += (f"{slowdown}; blocks of different sizes or outside load can cause this, "
                             "so it is reported, not scored",)
    comparison = ComparisonResult(
        baseline=str(baseline_file), candidate=str(cand_path), device=device,
        timer="cuda_events" if device.startswith("cuda") else "scorer_wall_clock", seed=master,
        samples=samples, fingerprint=fp,
        config=dict(sampler_cfg.to_dict(), processes=cfg.processes, confidence=rule.reported_confidence(decision)),
        extra={"baseline_alone_ns": run.before, "timed_output_checks": run.timed_checks,
               "timing_mode_requested": spec.timing_mode if device.startswith("cuda") else None,
               "candidate_blocks": run.candidate_blocks,
               "stopping": dict(rule.to_dict(), decision=decision, processes_run=len(run.parts)),
               "package_sources": {side: {src.name: str(src.tree) for src in sources} for side, sources in
                                   (("baseline", cfg.base_packages), ("candidate", cfg.cand_packages)) if sources},
               **merge_diagnostics(run.diagnostics)})
    return ScoreResult(verdict=VERDICT_SCORED, reasons=(), checks=run.checks, comparison=comparison,
                       worker_logs=run.logs, **base)


# Scored blocks last at least this long: the wall-clock tamper checks have a few ms of
# per-block noise, which must stay small against a block.
SCORE_MIN_BLOCK_S = 0.01


def _sampler_config(spec: TaskSpec, cfg: ScoreConfig) -> SamplerConfig:
    sc = cfg.sampler
    if sc.min_block_s < SCORE_MIN_BLOCK_S:
        sc = dataclasses.replace(sc, min_block_s=SCORE_MIN_BLOCK_S)
    if spec.min_pairs > sc.min_pairs:
        sc = dataclasses.replace(sc, min_pairs=spec.min_pairs, max_pairs=max(sc.max_pairs, spec.min_pairs))
    return sc


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


def gate_only(task: str | Path, candidate: str | Path, config: ScoreConfig | None = None) -> tuple[int, list[Failure]]:
    """The correctness gate alone (selfcheck, quick checks): (checks run, failures)."""
    cfg = config or ScoreConfig()
    spec = load_task(task)
    device = check_device(cfg.device or spec.device)
    init_seed, probe_seed, *seeds = derive_seeds(secrets.randbits(62), 2 + cfg.check_seeds)
    program = TaskProgram(spec, device, init_seed=init_seed)
    with candidate_worker(spec, Path(candidate), cfg) as w:
        try:
            w.start(cfg.load_timeout_s)
            load_side(w, spec, device, Path(candidate), cfg, init_seed, probe_seed)
            return gate(w, program, seeds, cfg.call_timeout_s)
        except CandidateRejected as exc:
            return 0, [Failure(exc.reason, exc.message)]
