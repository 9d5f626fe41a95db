"""A perf task's score once `score` holds the device: its worker processes, one fresh pair
(baseline, candidate) after another, each timing its share of the AB-BA pairs (docs/verdict.md,
"processes"), stopped when the verdict is settled (core/stopping.py), into one ScoreResult.
This process holds the secret seeds, regenerates inputs, runs the trusted reference and computes
every verdict; what each process's blocks say besides their times is process_checks.py."""
from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from ..core import sol, stats, tamper
from ..core.errors import CandidateRejected
from ..core.results import ComparisonResult, PairedSamples
from ..core.verdict import S_REF_LIVE, VERDICT_REJECTED, VERDICT_SCORED, BenchmarkComparison, Reason, ScoreResult
from ..core.stopping import StoppingRule, interim_decision
from ..device.device_session import device_session
from ..device.fingerprint import fingerprint
from ..isolation.processes.worker_client import WorkerClient
from ..sides.build import Side, SideSettings, build_sides
from ..sides.contract_blocks import ContractBlocks, pair_end
from ..task import bench_configs
from ..task.correctness import Failure
from ..task.program import TaskProgram
from ..task.solexec import DEFINITION, shrink_warning
from ..task.spec import FORMAT_GPUMODE, FORMAT_KERNELBENCH, FORMAT_SOLEXEC, TaskSpec
from ..timing.sampler import ProgressFn, SamplerConfig, sample_interleaved
from ..timing.schedule import CANDIDATE, SOLUTION
from .baseline_pool import BaselinePool
from .config import PerfJob, RunSetup, ScoreConfig
from .gate import gate_with_contract, load_side, task_tolerance
from .process_checks import (baseline_alone, block_diagnostics, check_tampering, clock_warnings, isolation_record,
                             merge_diagnostics)
from .s_ref_choice import choose_s_ref
from .speed_of_light import speed_of_light_inputs
from .sandboxes import ScorerStart
from .verdict_fields import VerdictFields
from .workers import ForkedWorkers, Workers


def score_perf(job: PerfJob, start: ScorerStart, say: Callable[[str], None], *,
               progress: ProgressFn | None = None, baselines: BaselinePool | None = None,
               workers: Workers | None = None) -> ScoreResult:
    """A perf task's score, on the cores of the device lease `score` holds; CPU workers forked
    from the zygotes `score` started (sandboxes.start_scorer), unless `workers` gives them;
    the candidate's requests end by the job's deadline (core/deadline.py)."""
    spec, cand_path, device, key, cfg, deadline = job.spec, job.candidate, job.device, job.key, job.cfg, job.deadline
    threading = start.threading
    workers = workers or ForkedWorkers(start.servers, baselines, start.nondumpable)
    check_seeds = key.check_seeds(cfg.check_seeds)
    program = TaskProgram(spec, device, init_seed=key.init_seed)
    fp = fingerprint(device)
    s_ref, s_ref_source, warnings, calibration = choose_s_ref(spec, device, fp, cfg)
    sampler_cfg = _sampler_config(spec, cfg)
    base = VerdictFields(task=spec.name, task_kind=spec.kind, candidate=str(cand_path), device=device,
                         seed=key.timing, deadline_s=deadline.seconds if deadline is not None else None,
                         overrides=dict(spec.overrides), s_ref=s_ref, s_ref_source=s_ref_source,
                         warnings=list(warnings))
    baseline_file = {FORMAT_KERNELBENCH: spec.root, FORMAT_GPUMODE: spec.file("reference"),
                     FORMAT_SOLEXEC: spec.root / DEFINITION}.get(spec.format, spec.file("baseline"))
    _where_it_runs(base, spec, device, threading)
    solution_file = spec.file("solution") if s_ref_source == S_REF_LIVE else None
    setup = RunSetup(spec, program, device, cand_path, baseline_file, cfg, sampler_cfg, threading, key,
                     deadline, solution_file)
    if not spec.benchmarks:   # (GPU MODE: per benchmark, below)
        base.sol_inputs, why = speed_of_light_inputs(program, spec, device, key.probe_seed)
        if why:
            base.warn(why)
    rule = StoppingRule(cfg.processes, s_ref, sampler_cfg.confidence, cfg.target_r_ci, cfg.ci_target,
                        cfg.stop_min_processes)
    shared = _SizeShared(rule, check_seeds, fp, calibration, workers, say, progress, baselines)
    if not spec.benchmarks:
        timed = _time(setup, shared, base)
        if isinstance(timed, ScoreResult):
            return timed
        comparison, checks, logs = timed
        return base.result(verdict=VERDICT_SCORED, reasons=(), checks=checks, comparison=comparison,
                           worker_logs=logs)
    # GPU MODE, SOL-ExecBench: the gate once, then each benchmark timed on its own
    benchmarks, checks, logs, peaks = [], 0, {}, {}
    for i, name in enumerate(spec.benchmarks):
        say(f"benchmark {i + 1} of {len(spec.benchmarks)}: {spec.shown_case(name)}")
        one = dataclasses.replace(setup, spec=dataclasses.replace(spec, timed_size=name), gate=i == 0)
        timed = _time(one, shared, base)
        if isinstance(timed, ScoreResult):
            return timed
        comparison, n, logs = timed
        checks += n
        sol_inputs, why = speed_of_light_inputs(program, one.spec, device, key.probe_seed, peaks)
        if why:
            base.warn(why)
        impossible = sol.impossible_speed(sol_inputs, comparison)
        if impossible:
            return base.result(verdict=VERDICT_REJECTED, reasons=(Reason("tamper.impossible_speed",
                                                                         f"{name}: {impossible}"),),
                               checks=checks, worker_logs=logs)
        benchmarks.append(BenchmarkComparison(name, spec.shown_case(name), comparison, sol_inputs))
    return base.result(verdict=VERDICT_SCORED, reasons=(), checks=checks, benchmarks=tuple(benchmarks),
                       worker_logs=logs)


def _where_it_runs(base: VerdictFields, spec: TaskSpec, device: str, threading) -> None:
    """The verdict's threading record, and warnings about where the score runs."""
    if spec.format == FORMAT_GPUMODE and spec.device == "cuda" and device == "cpu":
        base.warn(f"{spec.name} is a CUDA problem run on the CPU (--device cpu): the tensors and "
                  "generators its code asks for on cuda were made on the CPU (docs/tasks.md)")
    shrunk = shrink_warning(spec.name, spec.root, spec.overrides) if spec.format == FORMAT_SOLEXEC else None
    if shrunk:
        base.warn(shrunk)
    if threading is not None:
        base.threading = threading.to_dict()
        if threading.oversubscribed:
            base.warn(f"{spec.name} asks for {spec.threads} threads; this process may use only "
                      f"{len(threading.cpus)} cores, so threads share them")


@dataclass(frozen=True)
class _SizeShared:
    """What every timed size of one score shares (GPU MODE times several, each on its own)."""

    rule: StoppingRule
    check_seeds: list[int]
    fp: dict                                   # the device's fingerprint
    calibration: bench_configs.SRef | None     # the bench_configs entry s_ref came from, if any
    workers: Workers
    say: Callable[[str], None]
    progress: ProgressFn | None
    baselines: BaselinePool | None


def _time(setup: RunSetup, shared: _SizeShared, base: VerdictFields
          ) -> tuple[ComparisonResult, int, dict[str, str]] | ScoreResult:
    """The worker processes of one timed size: its comparison, the checks run and the
    candidate's log; or the rejection.  Adds what the processes found (warnings, the sandbox,
    the clock control) and its own warnings to `base`."""
    spec, device, cfg, sampler_cfg, master = setup.spec, setup.device, setup.cfg, setup.sampler, setup.key.timing
    rule, say, calibration = shared.rule, shared.say, shared.calibration
    run = TimingRun(setup, say, shared.progress, shared.workers, shared.baselines, base.contract or None)
    decision, rejection = None, None
    try:
        failures = run.prepare(shared.check_seeds)
        if failures is not None:
            rejection = tuple(Reason(f.reason, f.message) for f in failures)
        for j in range(0 if failures is not None else cfg.processes):
            run.process(j)
            if cfg.stop_early:
                decision = interim_decision(run.parts, rule, seed=master, n_resamples=sampler_cfg.n_resamples)
            if decision is not None:
                say(f"stopping after {j + 1} of {cfg.processes} processes: {decision}")
                break
    except CandidateRejected as exc:
        message = exc.message
        if setup.deadline is not None and setup.deadline.passed():   # what had run by then
            message += (f"; by then {'the gate had passed' if run.gated else 'the gate had not finished'}, "
                        f"{len(run.parts)} of {cfg.processes} timed processes had run and {run.checks} "
                        "output checks")
        rejection = (Reason(exc.reason, message),)
    run.report_into(base)
    if rejection is not None:
        return base.result(verdict=VERDICT_REJECTED, reasons=rejection, checks=run.checks, worker_logs=run.logs)
    samples = PairedSamples.concat(run.parts)
    drift = calibration.baseline_drift(statistics.median(samples.baseline_ns)) if calibration else None
    if drift:
        base.warn(drift)
    slowdown = tamper.baseline_slowdown(run.before, run.parts[0].baseline_ns)
    if slowdown:
        base.warn(f"{slowdown}; blocks of different sizes or outside load can cause this, "
                  "so it is reported, not scored")
    comparison = ComparisonResult(
        baseline=str(setup.baseline_file), candidate=str(setup.cand_path), device=device,
        timer=run.timer, seed=master,
        samples=samples, fingerprint=shared.fp,
        config=dict(sampler_cfg.to_dict(), processes=cfg.processes, confidence=rule.reported_confidence(decision)),
        extra={"baseline_alone_ns": run.before, "timed_output_checks": run.timed_checks,
               "timing_mode_requested": spec.timing_mode if run.timing_mode is not None else None,
               "candidate_blocks": run.candidate_blocks, "process_seconds": run.process_seconds,
               "stopping": dict(rule.to_dict(), decision=decision, processes_run=len(run.parts)),
               "package_sources": {side: {src.name: str(src.tree) for src in sources} for side, sources in
                                   (("baseline", cfg.base_packages), ("candidate", cfg.cand_packages)) if sources},
               **merge_diagnostics(run.diagnostics)},
        solution=PairedSamples.concat(run.solution_parts) if run.solution_parts else None)
    base.warn(*comparison.warnings)   # (order_effect)
    if comparison.solution is not None and comparison.solution_summary.speedup.value <= 1.0:
        base.warn(f"live s_ref: the task's solution ran {comparison.solution_summary.speedup.value:.3f}x "
                  "the baseline here, not faster, so there is no s_ref to reward against: R_perf is null")
    impossible = sol.impossible_speed(base.sol_inputs, comparison)   # (GPU MODE: per benchmark, in score_perf)
    if impossible:
        return base.result(verdict=VERDICT_REJECTED, reasons=(Reason("tamper.impossible_speed", impossible),),
                           checks=run.checks, worker_logs=run.logs, comparison=comparison)
    return comparison, run.checks, run.logs


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


@dataclass(frozen=True)
class _StartedWorkers:
    """One process's workers once started (`TimingRun._started`): the candidate's not yet loaded."""

    cand: WorkerClient
    base_w: WorkerClient
    base_side: Side
    make_cand_side: Callable[[], Side]
    make_sol_side: Callable[[], Side] | None


class TimingRun:
    """The worker processes of one score, one fresh pair (baseline, candidate) at a time.

    An untimed pair first (`prepare`) times the baseline alone (before any candidate code
    loads) and runs the correctness gate; then each timed process measures its share of the
    AB-BA pairs, with the block size the first one chose.  Between processes both workers are replaced (on the CPU forked afresh
    from each side's zygote, else new interpreters), so allocator state, physical memory and thread
    pools are drawn afresh (stats.cluster_bootstrap_ci)."""

    def __init__(self, setup: RunSetup, say: Callable[[str], None], progress: ProgressFn | None,
                 workers: Workers, baselines: BaselinePool | None = None, contract: dict | None = None):
        self.setup, self.say, self.progress, self.workers = setup, say, progress, workers
        self.baselines = baselines   # a batch's: the baseline's time alone, kept between its scores
        self.parts: list[PairedSamples] = []
        self.solution_parts: list[PairedSamples] = []   # --s-ref live: the solution's pairs, per process
        self.diagnostics: list[dict] = []
        self.before: list[float] = []
        self.checks = self.timed_checks = self.candidate_blocks = 0
        self.gated = False   # the gate passed (or, GPU MODE's later benchmarks, was not this size's)
        # The input contract's calls (contract_gate's record; GPU MODE's later benchmarks: the
        # first's), and the contract blocks run among this run's timed ones.
        self.contract: dict | None = contract
        self.contract_blocks = 0
        # Per timed process: seconds to start its workers and load both sides, then to warm up
        # and measure its pairs (#59: what one more process costs).
        self.process_seconds: list[dict[str, float]] = []
        self.logs: dict[str, str] = {}
        self.timing_mode: str | None = None   # CUDA: chosen in process 0 (task mode, or auto)
        self.timer: str | None = None         # what times the blocks (the sides', Side.timer)
        self.warnings: list[str] = []          # for the verdict, in the order found, each once
        self.isolation: dict | None = None     # the candidate's sandbox, as process 0 found it
        self.clock_control: dict | None = None  # the last process's clock control

    def _warn(self, warnings: Iterable[str]) -> None:
        self.warnings += [w for w in warnings if w not in self.warnings]

    def report_into(self, base: VerdictFields) -> None:
        """What the processes found, into the verdict's fields (each warning once)."""
        if self.isolation is not None:
            base.isolation = self.isolation
        if self.clock_control is not None:
            base.clock_control = self.clock_control
        if self.contract is not None:
            base.contract = dict(self.contract, blocks=self.contract.get("blocks", 0) + self.contract_blocks)
        base.warn(*self.warnings)

    def _baseline_alone(self, base_side: Side) -> list[float]:
        if self.baselines is not None and self.baselines.alone_ns is not None:
            return self.baselines.alone_ns   # measured before the first candidate of this batch
        before = baseline_alone(base_side, self.setup.sampler, self.setup.key.baseline_alone_seed())
        if self.baselines is not None:
            self.baselines.alone_ns = before
        return before

    @contextlib.contextmanager
    def _started(self, j: int | None, what: str) -> Iterator[_StartedWorkers]:
        """One worker process pair (and the solution's worker, if timed with a live s_ref), started,
        arenas mapped, the baseline's code (and the solution's) loaded; not yet the candidate's.
        `j`: the timed process's index, None for the untimed one (`prepare`)."""
        su = self.setup
        cfg, spec = su.cfg, su.spec
        self.say(f"starting workers ({what})")
        self.workers.ready(cfg.load_timeout_s)
        # Both interpreters start together (importing torch takes seconds), or both are forked.
        with self.workers.candidate(su) as cand, self.workers.baseline(su, j) as base_w, \
                (self.workers.solution(su) if j is not None else nullcontext(None)) as sol_w:
            try:
                stats.preload()   # (fresh interpreters: while they start; else done already)
                if base_w.isolation is None:   # (a kept baseline worker started for an earlier row)
                    base_w.start(cfg.load_timeout_s)
                if sol_w is not None:
                    sol_w.start(cfg.load_timeout_s)
                isolation, missing = isolation_record(cand, cfg, self.workers.nondumpable)
                isolation.update(self.workers.provenance())
                if self.isolation is None:
                    self.isolation = isolation
                    self._warn(missing)
                base_side, make_cand_side, make_sol_side = build_sides(
                    spec, su.program, su.device, su.sampler,
                    SideSettings(cfg.call_timeout_s, task_tolerance(spec), cfg.timed_check_fraction,
                                 cfg.timed_check_budget,
                                 su.threading.spare_cores() if su.threading else None), base_w, cand,
                    su.key.probe_seed, sol_w)
                load_side(base_w, spec, su.device, su.baseline_file, cfg, su.key.init_seed, su.key.probe_seed,
                          self.timing_mode or "events")
                if sol_w is not None:
                    load_side(sol_w, spec, su.device, su.solution_file, cfg, su.key.init_seed, su.key.probe_seed,
                              self.timing_mode or "events")
                yield _StartedWorkers(cand, base_w, base_side, make_cand_side, make_sol_side)
            finally:
                self.logs = {"candidate": cand.log_tail()}

    def _load_candidate(self, w: _StartedWorkers) -> Side:
        su = self.setup
        self.say("loading candidate")
        load_side(w.cand, su.spec, su.device, su.cand_path, su.cfg, su.key.init_seed, su.key.probe_seed,
                  self.timing_mode or "events")
        return w.make_cand_side()

    def prepare(self, gate_seeds: list[int]) -> list[Failure] | None:
        """The untimed process before the timed ones: the baseline timed alone before any
        candidate code loads (the A/A reference; the CUDA timing mode is chosen from it), then
        the candidate's correctness gate.  Returns the gate's failures, or None.

        Its workers are closed, not timed: each ran work the other did not (the gate's calls,
        the blocks alone), and a process timed in them read apart from the later ones, which
        widened the CI that covers the spread between processes (benchmarks/results/timing.md, "The
        protocol versions, measured", 4).  So every timed pair runs in two workers that did the
        same things before it."""
        su = self.setup
        with self._started(None, "the gate's") as w:
            self.say("timing the baseline alone")
            self.before = self._baseline_alone(w.base_side)
            self.timer = w.base_side.timer
            self.timing_mode = w.base_side.choose_timing_mode(
                su.spec.timing_mode, statistics.median(self.before) if self.before else None)
            if su.gate:   # (GPU MODE's later benchmarks: the baseline alone only)
                cand_side = self._load_candidate(w)
                self.say(f"correctness gate: {len(su.spec.sizes)} sizes x {len(gate_seeds)} seeds")
                self.checks, fails, self.contract = gate_with_contract(
                    w.cand, su.program, gate_seeds, su.key.contract_seed(), su.cfg.call_timeout_s,
                    cand_side.gate_side())
                if fails:
                    return fails
                self._warn(cand_side.gate_checks(su.spec.sizes, gate_seeds[0]))
        self.gated = True
        return None

    def process(self, j: int) -> None:
        """Timed worker process pair j: its pairs into self.parts."""
        su = self.setup
        t0 = time.perf_counter()
        with self._started(j, f"{j + 1} of {su.cfg.processes}") as w:
            cand_side = self._load_candidate(w)
            try:
                done = sum(p.n_pairs for p in self.parts)
                progress = (None if self.progress is None else
                            lambda i, summary: self.progress(done + i, summary))  # noqa: E731
                sol_side = w.make_sol_side() if w.make_sol_side is not None else None
                with device_session(su.device, su.cfg.clocks) as dev:
                    self.clock_control = dev.control.to_dict()
                    between = "" if sol_side is None else ", the solution's against the baseline between them"
                    self.say(f"timing AB-BA pairs{between} (clocks: {dev.control.status})")
                    t1 = time.perf_counter()
                    part = self._sample(w.base_side, cand_side, sol_side, j, progress, w.base_side.monitor(dev))
                    self.process_seconds.append({"start_s": t1 - t0, "sample_s": time.perf_counter() - t1})
                cand_side.finish()
                self._warn(clock_warnings(su.device, dev.control, part))
                self._warn(msg for side in (w.base_side, cand_side) for msg in side.fallback_warnings())
                check_tampering(w.base_side, cand_side, part, su.threading, sol_side)
                self.parts.append(part)
                self.diagnostics.append(block_diagnostics(w.base_side, cand_side, part, sol_side))
                self.timed_checks += cand_side.checks
                self.checks += cand_side.checks
                self.candidate_blocks += len(cand_side.blocks)
            finally:   # (a rejection names the contract blocks run before it too)
                self.contract_blocks += cand_side.contract_blocks

    def _sample(self, base_side: Side, cand_side: Side, sol_side: Side | None, j: int,
                progress: ProgressFn | None, monitor) -> PairedSamples:
        """Process j's share of the pairs; with a solution side, its pairs against the baseline
        interleaved with the candidate's, and kept in self.solution_parts."""
        su = self.setup
        others = {CANDIDATE: cand_side} if sol_side is None else {CANDIDATE: cand_side, SOLUTION: sol_side}
        transforms = tuple(self.contract["transforms"]) if self.contract is not None else ()
        plan = ContractBlocks(su.program, transforms, su.key.contract_blocks_seed(j), su.cfg.contract_block_share)
        parts = sample_interleaved(base_side, others, su.sampler.per_process(su.cfg.processes),
                                   seed=su.key.process_seed(j),
                                   progress=progress, monitor=monitor,
                                   iters=self.parts[0].iters_per_block if self.parts else None,
                                   pair_end=pair_end(cand_side, [base_side, *others.values()], plan),
                                   every={SOLUTION: su.cfg.live_solution_every})
        if sol_side is not None:
            self.solution_parts.append(parts[SOLUTION])
        return parts[CANDIDATE]
