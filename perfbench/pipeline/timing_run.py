"""One score's timing: fresh worker pairs, one after another, each measuring its share of the
AB-BA pairs (docs/verdict.md, "processes"); and the per-run tamper checks."""
from __future__ import annotations

import statistics
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import stats, tamper
from ..correctness import Failure
from ..device.clock_probe import ProbedMonitor
from ..device.clocks import ClockControl
from ..device.session import device_session
from ..errors import CandidateRejected, EnvironmentUnavailable
from ..isolation.client import WorkerClient
from ..isolation.cpu_threads import CpuThreading
from ..isolation.fork_server import ForkServer
from ..isolation.protocol import Op
from ..results import PairedSamples
from ..task_runtime import TaskProgram
from ..tasks import TaskSpec
from ..timing.modes import choose_mode
from ..timing.sampler import ProgressFn, SamplerConfig, grown_iters, sample_interleaved
from ..timing.schedule import BASELINE, CANDIDATE, SOLUTION
from .arena_side import ArenaSide
from .baseline_pool import BaselinePool
from .config import ScoreConfig
from .gate import candidate_worker, derive_seeds, gate, load_side, task_tolerance
from .sides import AnySide, SideSettings, build_sides
from .worker_side import WorkerSide


@dataclass(frozen=True)
class RunSetup:
    """What every worker process of one score is given."""

    spec: TaskSpec
    program: TaskProgram
    device: str
    cand_path: Path
    baseline_file: Path
    cfg: ScoreConfig
    sampler: SamplerConfig
    threading: CpuThreading | None
    init_seed: int
    probe_seed: int
    master: int
    solution_file: Path | None = None   # s_ref live: the task's solution, timed against the baseline too
    gate: bool = True                   # process 0 runs the correctness gate (GPU MODE: the first benchmark's)


class TimingRun:
    """The worker processes of one score, one fresh pair (baseline, candidate) at a time.

    Process 0 also times the baseline alone (before any candidate code loads) and runs the
    correctness gate; every process then measures its share of the AB-BA pairs, with the block
    size process 0 chose.  Between processes both workers are replaced (on the CPU forked afresh
    from each side's zygote, else new interpreters), so allocator state, physical memory and thread
    pools are drawn afresh (stats.cluster_bootstrap_ci)."""

    def __init__(self, setup: RunSetup, say: Callable[[str], None], progress: ProgressFn | None,
                 baselines: BaselinePool | None, servers: dict[str, ForkServer], nondumpable: bool):
        self.setup, self.say, self.progress, self.baselines = setup, say, progress, baselines
        self.nondumpable = nondumpable   # set by `score` before any sandboxed process (start_scorer)
        self.parts: list[PairedSamples] = []
        self.solution_parts: list[PairedSamples] = []   # --s-ref live: the solution's pairs, per process
        self.diagnostics: list[dict] = []
        self.before: list[float] = []
        self.checks = self.timed_checks = self.candidate_blocks = 0
        self.logs: dict[str, str] = {}
        self.timing_mode: str | None = None   # CUDA: chosen in process 0 (task mode, or auto)
        # CPU: the zygotes each side's workers are forked from (sandboxes.start_scorer; the
        # caller closes them); none: fresh interpreters.
        self.servers: dict[str, ForkServer] = dict(servers)

    def _await_fork_servers(self) -> None:
        """Wait until the zygotes have imported torch; scipy.stats is imported meanwhile."""
        waiting = [server for server in self.servers.values() if server.zygote_pid is None]
        if not waiting:
            return
        stats.preload()
        for server in waiting:
            server.start(self.setup.cfg.load_timeout_s)

    def _choose_timing_mode(self, base_w: WorkerClient) -> None:
        """CUDA: the task's timing mode; "auto" decides from the baseline's time alone."""
        su = self.setup
        if not su.device.startswith("cuda"):
            return
        per_call = statistics.median(self.before) if self.before else None
        self.timing_mode = choose_mode(su.spec.timing_mode, per_call)
        if self.timing_mode != "events":
            base_w.request(Op.SET_MODE, su.cfg.call_timeout_s, mode=self.timing_mode)

    def _baseline_worker(self, j: int):
        """Baseline worker j: a fresh one closed with this process, or the pool's (kept)."""
        su = self.setup
        make = lambda: WorkerClient("baseline", untrusted=False, sandbox=su.cfg.sandbox,  # noqa: E731
                                    threading=su.threading, server=self.servers.get("baseline"))
        if self.baselines is None:
            return make()
        key = (str(su.baseline_file), su.spec.name, tuple(sorted(su.spec.overrides.items())), su.device,
               su.threading, su.cfg.sandbox)
        return nullcontext(self.baselines.worker(key, j, make))

    def _solution_worker(self):
        """--s-ref live: the task's solution (trusted), forked from the baseline's zygote."""
        su = self.setup
        if su.solution_file is None:
            return nullcontext(None)
        return WorkerClient(SOLUTION, untrusted=False, sandbox=su.cfg.sandbox, threading=su.threading,
                            server=self.servers.get("baseline"))

    def _baseline_alone(self, base_side: ArenaSide | WorkerSide) -> list[float]:
        if self.baselines is not None and self.baselines.alone_ns is not None:
            return self.baselines.alone_ns   # measured before the first candidate of this batch
        before = baseline_alone(base_side, self.setup.sampler, derive_seeds(self.setup.master ^ 0x5A5A, 1)[0])
        if self.baselines is not None:
            self.baselines.alone_ns = before
        return before

    def process(self, j: int, gate_seeds: list[int], base: dict) -> list[Failure] | None:
        """Worker process pair j: its pairs into self.parts, or the gate's failures."""
        su = self.setup
        cfg, spec, first = su.cfg, su.spec, j == 0
        self.say(f"starting workers ({j + 1} of {cfg.processes})")
        self._await_fork_servers()
        # Both interpreters start together (importing torch takes seconds), or both are forked.
        with candidate_worker(spec, su.cand_path, cfg, su.threading, self.servers.get("candidate")) as cand, \
                self._baseline_worker(j) as base_w, self._solution_worker() as sol_w:
            try:
                stats.preload()   # (fresh interpreters: while they start; else done already)
                if base_w.isolation is None:   # (a kept baseline worker started for an earlier row)
                    base_w.start(cfg.load_timeout_s)
                if sol_w is not None:
                    sol_w.start(cfg.load_timeout_s)
                isolation, missing = isolation_record(cand, cfg, self.nondumpable)
                if "candidate" in self.servers:
                    isolation["zygote_startup_ms"] = round(self.servers["candidate"].startup_s * 1e3, 1)
                    isolation["zygote_source"] = self.servers["candidate"].source
                if first:
                    base["isolation"] = isolation
                    base["warnings"] += missing
                base_side, make_cand_side, make_sol_side = build_sides(
                    spec, su.program, su.device, su.sampler,
                    SideSettings(cfg.call_timeout_s, task_tolerance(spec), cfg.timed_check_fraction,
                                 cfg.timed_check_budget,
                                 su.threading.spare_cores() if su.threading else None), base_w, cand,
                    su.probe_seed, sol_w)
                load_side(base_w, spec, su.device, su.baseline_file, cfg, su.init_seed, su.probe_seed,
                          self.timing_mode or "events")
                if first:   # the baseline alone, before any candidate code is loaded: the A/A reference
                    self.say("timing the baseline alone")
                    self.before = self._baseline_alone(base_side)
                    self._choose_timing_mode(base_w)
                if sol_w is not None:
                    load_side(sol_w, spec, su.device, su.solution_file, cfg, su.init_seed, su.probe_seed,
                              self.timing_mode or "events")
                self.say("loading candidate")
                load_side(cand, spec, su.device, su.cand_path, cfg, su.init_seed, su.probe_seed,
                          self.timing_mode or "events")
                cand_side = make_cand_side()
                if first and su.gate:
                    self.say(f"correctness gate: {len(spec.sizes)} sizes x {len(gate_seeds)} seeds")
                    self.checks, fails = gate(cand, su.program, gate_seeds, cfg.call_timeout_s,
                                              cand_side if isinstance(cand_side, ArenaSide) else None)
                    if fails:
                        return fails
                    if su.device.startswith("cuda"):
                        base["warnings"] += side_stream_gate(cand, spec, gate_seeds[0], cfg.call_timeout_s)
                done = sum(p.n_pairs for p in self.parts)
                progress = (None if self.progress is None else
                            lambda i, summary: self.progress(done + i, summary))  # noqa: E731
                sol_side = make_sol_side() if make_sol_side is not None else None
                with device_session(su.device, cfg.clocks) as dev:
                    base["clock_control"] = dev.control.to_dict()
                    between = "" if sol_side is None else ", the solution's against the baseline between them"
                    self.say(f"timing AB-BA pairs{between} (clocks: {dev.control.status})")
                    part = self._sample(base_side, cand_side, sol_side, j, progress, block_monitor(dev, base_side))
                cand_side.finish()
                base["warnings"] += tuple(w for w in clock_warnings(su.device, dev.control, part)
                                          if w not in base["warnings"])
                base["warnings"] += tuple(w for w in timing_fallbacks(base_side, cand_side) if w not in base["warnings"])
                check_tampering(base_side, cand_side, part, su.threading, sol_side)
            finally:
                self.logs = {"candidate": cand.log_tail()}
            self.parts.append(part)
            self.diagnostics.append(block_diagnostics(base_side, cand_side, part, sol_side))
            self.timed_checks += cand_side.checks
            self.checks += cand_side.checks
            self.candidate_blocks += len(cand_side.blocks)
        return None


    def _sample(self, base_side: AnySide, cand_side: AnySide, sol_side: AnySide | None, j: int,
                progress: ProgressFn | None, monitor) -> PairedSamples:
        """Process j's share of the pairs; with a solution side, its pairs against the baseline
        interleaved with the candidate's, and kept in self.solution_parts."""
        su = self.setup
        others = {CANDIDATE: cand_side} if sol_side is None else {CANDIDATE: cand_side, SOLUTION: sol_side}
        parts = sample_interleaved(base_side, others, su.sampler.per_process(su.cfg.processes),
                                   seed=su.master if j == 0 else derive_seeds(su.master ^ 0xB10C, j + 1)[j],
                                   progress=progress, monitor=monitor,
                                   iters=self.parts[0].iters_per_block if self.parts else None,
                                   pair_end=cand_side.end_pair)
        if sol_side is not None:
            self.solution_parts.append(parts[SOLUTION])
        return parts[CANDIDATE]


def isolation_record(cand: WorkerClient, cfg: ScoreConfig, nondumpable: bool) -> tuple[dict, tuple[str, ...]]:
    """Start the candidate's worker; the layers it runs in, for the verdict, and a warning per
    missing one.  With `require_sandbox`, a missing layer stops the run (exit 2)."""
    iso = cand.start(cfg.load_timeout_s)
    missing = iso.missing + (() if nondumpable else ("scorer_nondumpable: prctl(PR_SET_DUMPABLE) failed",))
    if cfg.require_sandbox and missing:
        raise EnvironmentUnavailable(f"--require-sandbox: {'; '.join(missing)}")
    record = dict(iso.to_dict(), scorer_nondumpable=nondumpable,
                  startup_ms=round(cand.startup_s * 1e3, 1) if cand.startup_s is not None else None)
    return record, tuple(f"sandbox layer missing: {m}" for m in missing)


def block_monitor(dev, base_side: ArenaSide | WorkerSide):
    """CUDA: NVML's conditions per block (where NVML answers) and the probed SM clock."""
    if not isinstance(base_side, WorkerSide) or base_side.probe is None:
        return dev.monitor
    locked = dev.control.target_sm_mhz if dev.control.locked else None
    return ProbedMonitor(dev.monitor, base_side.probe, locked)


def timing_fallbacks(base: ArenaSide | WorkerSide, cand: ArenaSide | WorkerSide) -> tuple[str, ...]:
    """A warning per side whose CUDA timer fell back (e.g. candidate.synchronizes)."""
    return tuple(f"{side.client.label}: {side.fallback[1]}"
                 for side in (base, cand) if isinstance(side, WorkerSide) and side.fallback)


def side_stream_gate(cand: WorkerClient, spec: TaskSpec, seed: int, timeout_s: float) -> tuple[str, ...]:
    """One profiled timed call per size: device work outside the timed window is
    `tamper.side_stream`.  Returns warnings where the profile could not tell."""
    warnings = []
    for size in spec.sizes:
        header, _ = cand.request(Op.PROFILE, timeout_s * 4, seed=seed, size=size)
        findings = header.get("findings")
        if findings is None:
            warnings.append(f"side-stream check could not run for size {size!r}: the profile held no timing "
                            f"window ({header.get('activities')} device activities)")
        elif findings:
            raise CandidateRejected("tamper.side_stream", f"size {size!r}: {findings[0]}"
                                    + (f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""))
    return tuple(warnings)


def clock_warnings(device: str, control: ClockControl, samples: PairedSamples) -> tuple[str, ...]:
    out = []
    if device.startswith("cuda") and not control.locked:
        out.append(f"GPU clocks were not locked ({control.status}: {control.reason}); boost and thermal "
                   "state can move both sides' times")
    if samples.throttled_pairs:
        out.append(f"{len(samples.throttled_pairs)} pairs ran while the GPU was throttled: {list(samples.throttled_pairs)}")
    if samples.discarded_throttled:
        out.append(f"{samples.discarded_throttled} throttled pairs were discarded and re-measured after a cool-down")
    return tuple(out)


def block_diagnostics(base: ArenaSide | WorkerSide, cand: ArenaSide | WorkerSide, samples: PairedSamples,
                      solution: ArenaSide | WorkerSide | None = None) -> dict:
    """What the verdict keeps besides the scored times: the worker-reported times of the paired
    blocks and (CPU) the per-block overhead subtracted from both sides.  (With a live s_ref the
    baseline's last n blocks come from both comparisons' pairs.)"""
    n = samples.n_pairs
    out = {"worker_reported_ns": {"baseline": [b.reported_ns / b.iters for b in base.blocks[-n:]],
                                  "candidate": [b.reported_ns / b.iters for b in cand.blocks[-n:]]}}
    if isinstance(base, WorkerSide):
        out["timing_mode"] = {"baseline": base.mode, "candidate": cand.mode}
    if isinstance(base, ArenaSide):
        out["null_block_ns"] = base.null_ns.get(samples.iters_per_block, [])
        out["overhead_ns"] = base.overhead_ns_at(samples.iters_per_block)
    used = [b.other_cpu_s for b in base.blocks if b.other_cpu_s is not None]
    out["candidate_cpu_during_baseline_s"] = sum(used) if used else None
    if solution is not None:
        used = [b.other_cpu_s for b in solution.blocks if b.other_cpu_s is not None]
        out["candidate_cpu_during_solution_s"] = sum(used) if used else None
    return out


def merge_diagnostics(parts: list[dict]) -> dict:
    """One process's `block_diagnostics` per entry -> the verdict's: times concatenated in pair
    order, CPU summed, per-block overheads listed per process."""
    def cpu(key: str) -> float | None:
        used = [p[key] for p in parts if p.get(key) is not None]
        return sum(used) if used else None

    out = {"worker_reported_ns": {side: sum((p["worker_reported_ns"][side] for p in parts), [])
                                  for side in ("baseline", "candidate")},
           "candidate_cpu_during_baseline_s": cpu("candidate_cpu_during_baseline_s")}
    if "candidate_cpu_during_solution_s" in parts[0]:
        out["candidate_cpu_during_solution_s"] = cpu("candidate_cpu_during_solution_s")
    if "timing_mode" in parts[0]:
        out["timing_mode"] = [p["timing_mode"] for p in parts]
    if "overhead_ns" in parts[0]:
        out["overhead_ns"] = [p["overhead_ns"] for p in parts]
        out["null_block_ns"] = [p["null_block_ns"] for p in parts]
    return out


def baseline_alone(side: ArenaSide | WorkerSide, sc: SamplerConfig, seed: int, blocks: int = 3) -> list[float]:
    """Per-iteration times of the baseline before the candidate is loaded (A/A reference).

    Three blocks: their median is what the slowdown warning (tamper.baseline_slowdown) and the
    CUDA timing-mode choice read, and every score, a rejected one too, pays for them before its
    gate (a fast kernel's 10 ms block costs the scorer ~0.2 s of inputs)."""
    side.run_block(1, seed)  # the first call pays for cold caches and page faults
    iters = 1
    # Sized as the pairs' blocks are: a fixed 4x ramp overshot up to 4x (and a fast kernel's
    # blocks are mostly input making: 10 ms of calls took ~0.2 s of the scorer's time each).
    while (bigger := grown_iters(iters, side.run_block(iters, seed) * iters * 1e-9, sc)) is not None:
        iters = bigger
    return [side.run_block(iters, seed + 1 + i) for i in range(blocks)]


def check_tampering(base: ArenaSide | WorkerSide, cand: ArenaSide | WorkerSide, samples: PairedSamples,
                    threading: CpuThreading | None = None, solution: ArenaSide | WorkerSide | None = None) -> None:
    # Interference first: a candidate burning CPU between its calls also inflates its own
    # unaccounted time, and the interference is the more specific explanation.  With a live
    # s_ref the solution's blocks count as the baseline's: slowing either pays.
    msg = tamper.cpu_while_baseline_ran(base.blocks + (solution.blocks if solution is not None else []))
    if msg:
        raise CandidateRejected("tamper.baseline_interference", msg)
    msg = tamper.more_threads_than_allowed(cand.blocks, threading.threads) if threading is not None else None
    if msg:
        raise CandidateRejected("tamper.threads", msg)
    if isinstance(cand, ArenaSide):
        return   # the scorer's clock decided: work hidden from the worker's timer was paid for
    msg = (tamper.unaccounted_time(tamper.host_clocked(base.blocks), tamper.host_clocked(cand.blocks), samples.n_pairs)
           or tamper.unaccounted_time_gpu(base.blocks, cand.blocks, samples.n_pairs))
    if msg:
        raise CandidateRejected("tamper.unaccounted_time", msg)
