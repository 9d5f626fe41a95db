"""`score(task, candidate)`: the correctness gate, then AB-BA timing against the baseline.

The candidate and the baseline each run in their own worker process; this process holds the
secret seeds, regenerates inputs, runs the trusted reference and computes every verdict.
"""
from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .. import bench_configs, tamper
from ..correctness import POISON_PATTERNS, Failure, Tolerance, judge_repeated_call, outputs_differ
from ..device.clocks import ClockControl, ClockRequest
from ..device.fingerprint import fingerprint
from ..device.session import device_session
from ..errors import CandidateRejected, EnvironmentUnavailable, UsageError
from ..impl_tests import run_tests
from ..isolation.client import WorkerClient
from ..isolation.protocol import ProtocolError, decode_values
from ..isolation.sandbox import make_nondumpable
from ..results import VERDICT_REJECTED, VERDICT_SCORED, ComparisonResult, PairedSamples, Reason, ScoreResult
from ..task_runtime import TaskProgram
from ..tasks import FORMAT_KERNELBENCH, TaskSpec, load_task
from ..timing.sampler import ProgressFn, SamplerConfig, sample_pairs
from .compare import check_device
from .arena_side import ArenaSide
from .sides import SideSettings, build_sides
from .worker_side import WorkerSide, verify_call


@dataclass(frozen=True)
class ScoreConfig:
    """How to score.  Defaults suit a CPU task of ~1-20 ms per call."""

    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    device: str | None = None         # None: the task's device
    check_seeds: int = 3              # fresh secret seeds per input size in the gate
    load_timeout_s: float = 300.0     # loading may compile C++ (~35 s here)
    call_timeout_s: float = 60.0      # one gate call or one timed block
    timed_check_fraction: float = 0.3  # share of timed blocks whose output is checked (>= 2 blocks)
    clocks: ClockRequest = field(default_factory=ClockRequest)  # GPU clock policy while timing
    s_ref: float | None = None        # override bench_configs / the task default
    seed: int | None = None           # master seed (default: secret, drawn per run)
    bench_configs_dir: Path | None = None
    sandbox: bool = True              # every isolation layer this machine allows (docs/security.md)
    require_sandbox: bool = False     # refuse to score unless every layer is active

    def __post_init__(self) -> None:
        if not self.call_timeout_s > 0 or not self.load_timeout_s > 0:
            raise ValueError("timeouts must be > 0 seconds")
        if self.check_seeds < 1:
            raise ValueError(f"check_seeds must be >= 1, got {self.check_seeds}")
        if self.s_ref is not None and not self.s_ref > 1:
            raise ValueError(f"s_ref must be > 1, got {self.s_ref}")


def _derive_seeds(master: int, n: int) -> list[int]:
    return [int(x) for x in np.random.SeedSequence(master).generate_state(n, dtype=np.uint64) >> np.uint64(2)]


def _tolerance(spec: TaskSpec) -> Tolerance | None:
    if spec.rtol is None and spec.atol is None:
        return None  # per-dtype defaults
    return Tolerance(spec.rtol if spec.rtol is not None else 0.0, spec.atol if spec.atol is not None else 0.0)


def _load(client: WorkerClient, spec: TaskSpec, device: str, file: Path, cfg: ScoreConfig,
          init_seed: int, probe_seed: int) -> None:
    client.request("load", cfg.load_timeout_s, task=spec.to_dict(), device=device, file=str(file),
                   untrusted=client.untrusted, init_seed=init_seed, cache_flush=cfg.sampler.cache_flush,
                   probe_seed=probe_seed, probe_size=spec.sizes[0])


def gate(client: WorkerClient, program: TaskProgram, seeds: list[int], timeout_s: float) -> tuple[int, list[Failure]]:
    """Run the candidate on every size with fresh seeds, twice per input set (one call per
    poison pattern); compare in this process."""
    spec = program.spec
    tol = _tolerance(spec)
    checks = 0
    runs = len(POISON_PATTERNS)
    for size in spec.sizes:
        # The scorer's own inputs and expected outputs, made once: they also size the poison.
        inputs = [program.make_inputs(seed, size) for seed in seeds]
        expected = [program.reference(x) for x in inputs]
        poison_bytes = sum(t.numel() * t.element_size() for t in expected[0] if hasattr(t, "numel"))
        header, blobs = client.request("check", timeout_s * len(seeds) * runs, seeds=seeds, size=size,
                                       poison_bytes=poison_bytes, poisons=list(POISON_PATTERNS))
        pos = 0
        try:
            results = header["results"]
            if not isinstance(results, list) or len(results) != len(seeds) * runs:
                raise ProtocolError(f"{len(results)} results for {len(seeds) * runs} calls")
            for j, (x, ref) in enumerate(zip(inputs, expected, strict=True)):
                calls = []
                for res in results[j * runs:(j + 1) * runs]:
                    n_out, n_in = len(res["outputs"]), len(res["inputs"])
                    outs = decode_values(res["outputs"], blobs[pos:pos + n_out])
                    ins = decode_values(res["inputs"], blobs[pos + n_out:pos + n_out + n_in])
                    pos += n_out + n_in
                    calls.append((outs, verify_call(program, x, outs, ins, tol, expected=ref)))
                differ = any(outputs_differ(calls[0][0], outs) for outs, _ in calls[1:])
                fails = judge_repeated_call([f for _, f in calls], differ)
                checks += 1
                if fails:
                    return checks, [Failure(f.reason, f"size {size!r}: {f.message}") for f in fails]
        except (KeyError, TypeError, ValueError, ProtocolError) as exc:
            raise CandidateRejected("tamper.protocol", f"{client.label}: bad check reply: {exc}") from None
    return checks, []


def _s_ref(spec: TaskSpec, device: str, fp: dict, cfg: ScoreConfig) -> tuple[float, str, list[str]]:
    if cfg.s_ref is not None:
        return cfg.s_ref, "command line", []
    key = bench_configs.device_key(device, fp)
    found = bench_configs.lookup(spec.name, key, cfg.bench_configs_dir)
    if found is not None:
        return found.value, found.source, []
    if spec.s_ref_default is not None:
        return spec.s_ref_default, "task default", [
            f"no bench_configs entry for {spec.name} on {key}: using the task's default s_ref="
            f"{spec.s_ref_default:g}; run `perfbench calibrate` on this machine for a measured one"]
    raise UsageError(f"{spec.name}: no s_ref for {key} in bench_configs and no task default; pass --s-ref")


def score(task: str | Path | TaskSpec, candidate: str | Path, config: ScoreConfig | None = None,
          *, overrides: dict[str, str] | None = None, progress: ProgressFn | None = None,
          log: Callable[[str], None] | None = None) -> ScoreResult:
    """Gate `candidate` on `task`, then time it against the task's baseline."""
    cfg = config or ScoreConfig()
    spec = task if isinstance(task, TaskSpec) else load_task(task, overrides)
    device = check_device(cfg.device or spec.device)
    cand_path = Path(candidate)
    if not cand_path.is_file():
        raise UsageError(f"{candidate}: no such file")
    master = cfg.seed if cfg.seed is not None else secrets.randbits(62)
    if spec.kind == "impl":
        return _score_impl(spec, cand_path, device, master, cfg, log or (lambda msg: None))
    init_seed, probe_seed, *check_seeds = _derive_seeds(master, 2 + cfg.check_seeds)
    program = TaskProgram(spec, device, init_seed=init_seed)
    say = log or (lambda msg: None)
    fp = fingerprint(device)
    s_ref, s_ref_source, warnings = _s_ref(spec, device, fp, cfg)
    sampler_cfg = _sampler_config(spec, cfg)
    base = dict(task=spec.name, task_kind=spec.kind, candidate=str(candidate), device=device, seed=master,
                overrides=dict(spec.overrides), s_ref=s_ref, s_ref_source=s_ref_source, warnings=tuple(warnings))
    baseline_file = spec.root if spec.format == FORMAT_KERNELBENCH else spec.file("baseline")
    checks = 0
    nondumpable = make_nondumpable()
    # Both interpreters start together (importing torch takes seconds).  The baseline is timed
    # alone first, before any candidate code is loaded, for the interference check.
    with _candidate_worker(spec, cand_path, cfg) as cand, \
            WorkerClient("baseline", untrusted=False, sandbox=cfg.sandbox) as base_w:
        logs = lambda: {"candidate": cand.log_tail()}  # noqa: E731 - read at the end, not now
        try:
            say("starting workers")
            base_w.start(cfg.load_timeout_s)
            base["isolation"], missing = _isolation(cand, cfg, nondumpable)
            base["warnings"] += missing
            base_side, make_cand_side = build_sides(
                spec, program, device, sampler_cfg,
                SideSettings(cfg.call_timeout_s, _tolerance(spec), cfg.timed_check_fraction), base_w, cand, probe_seed)
            say("loading baseline; timing it alone")
            _load(base_w, spec, device, baseline_file, cfg, init_seed, probe_seed)
            before = baseline_alone(base_side, sampler_cfg, _derive_seeds(master ^ 0x5A5A, 1)[0])
            say("loading candidate")
            _load(cand, spec, device, cand_path, cfg, init_seed, probe_seed)
            say(f"correctness gate: {len(spec.sizes)} sizes x {len(check_seeds)} seeds")
            checks, fails = gate(cand, program, check_seeds, cfg.call_timeout_s)
            if fails:
                return ScoreResult(verdict=VERDICT_REJECTED, reasons=tuple(Reason(f.reason, f.message) for f in fails),
                                   checks=checks, worker_logs=logs(), **base)
            cand_side = make_cand_side()
            with device_session(device, cfg.clocks) as dev:
                base["clock_control"] = dev.control.to_dict()
                say(f"timing AB-BA pairs (clocks: {dev.control.status})")
                samples = sample_pairs(base_side, cand_side, sampler_cfg, seed=master, progress=progress,
                                       monitor=dev.monitor)
            cand_side.finish()
            base["warnings"] += _clock_warnings(device, dev.control, samples)
            _check_tampering(base_side, cand_side, samples)
            slowdown = tamper.baseline_slowdown(before, samples.baseline_ns)
            if slowdown:
                base["warnings"] += (f"{slowdown}; blocks of different sizes or outside load can cause this, "
                                     "so it is reported, not scored",)
        except CandidateRejected as exc:
            return ScoreResult(verdict=VERDICT_REJECTED, reasons=(Reason(exc.reason, exc.message),), checks=checks,
                               worker_logs=logs(), **base)
        comparison = ComparisonResult(
            baseline=str(baseline_file), candidate=str(cand_path), device=device,
            timer="cuda_events" if device.startswith("cuda") else "scorer_wall_clock", seed=master,
            samples=samples, config=sampler_cfg.to_dict(), fingerprint=fp,
            extra={"baseline_alone_ns": before, "timed_output_checks": cand_side.checks,
                   "candidate_blocks": len(cand_side.blocks), **_block_diagnostics(base_side, cand_side, samples)})
        return ScoreResult(verdict=VERDICT_SCORED, reasons=(), checks=checks + cand_side.checks,
                           comparison=comparison, worker_logs=logs(), **base)


# Scored blocks last at least this long: the wall-clock tamper checks have a few ms of
# per-block noise, which must stay small against a block.
SCORE_MIN_BLOCK_S = 0.01


def _candidate_worker(spec: TaskSpec, cand_path: Path, cfg: ScoreConfig) -> WorkerClient:
    """The candidate's worker, sandboxed, with the task's trusted files (other than the candidate
    itself, when a task's own solution is scored) hidden from it."""
    hide: tuple[str, ...] = ()
    if spec.format != FORMAT_KERNELBENCH:
        hide = tuple(str(spec.file(role)) for role in ("solution", "reference")
                     if spec.file(role).resolve() != cand_path.resolve())
    return WorkerClient("candidate", untrusted=True, sandbox=cfg.sandbox, hide=hide)


def _isolation(cand: WorkerClient, cfg: ScoreConfig, nondumpable: bool) -> tuple[dict, tuple[str, ...]]:
    """Start the candidate's worker; the layers it runs in, for the verdict, and a warning per
    missing one.  With `require_sandbox`, a missing layer stops the run (exit 2)."""
    iso = cand.start(cfg.load_timeout_s)
    missing = iso.missing + (() if nondumpable else ("scorer_nondumpable: prctl(PR_SET_DUMPABLE) failed",))
    if cfg.require_sandbox and missing:
        raise EnvironmentUnavailable(f"--require-sandbox: {'; '.join(missing)}")
    record = dict(iso.to_dict(), scorer_nondumpable=nondumpable,
                  startup_ms=round(cand.startup_s * 1e3, 1) if cand.startup_s is not None else None)
    return record, tuple(f"sandbox layer missing: {m}" for m in missing)


def _clock_warnings(device: str, control: ClockControl, samples: PairedSamples) -> tuple[str, ...]:
    out = []
    if device.startswith("cuda") and not control.locked:
        out.append(f"GPU clocks were not locked ({control.status}: {control.reason}); boost and thermal "
                   "state can move both sides' times")
    if samples.throttled_pairs:
        out.append(f"{len(samples.throttled_pairs)} pairs ran while the GPU was throttled: {list(samples.throttled_pairs)}")
    if samples.discarded_throttled:
        out.append(f"{samples.discarded_throttled} throttled pairs were discarded and re-measured after a cool-down")
    return tuple(out)


def _sampler_config(spec: TaskSpec, cfg: ScoreConfig) -> SamplerConfig:
    sc = cfg.sampler
    if sc.min_block_s < SCORE_MIN_BLOCK_S:
        sc = dataclasses.replace(sc, min_block_s=SCORE_MIN_BLOCK_S)
    if spec.min_pairs > sc.min_pairs:
        sc = dataclasses.replace(sc, min_pairs=spec.min_pairs, max_pairs=max(sc.max_pairs, spec.min_pairs))
    return sc


def _block_diagnostics(base: ArenaSide | WorkerSide, cand: ArenaSide | WorkerSide, samples: PairedSamples) -> dict:
    """What the verdict keeps besides the scored times: the worker-reported times of the paired
    blocks and (CPU) the per-block overhead subtracted from both sides."""
    n = samples.n_pairs
    out = {"worker_reported_ns": {"baseline": [b.reported_ns / b.iters for b in base.blocks[-n:]],
                                  "candidate": [b.reported_ns / b.iters for b in cand.blocks[-n:]]}}
    if isinstance(base, ArenaSide):
        out["null_block_ns"] = base.null_ns.get(samples.iters_per_block, [])
        out["overhead_ns"] = base.overhead_ns_at(samples.iters_per_block)
    used = [b.other_cpu_s for b in base.blocks if b.other_cpu_s is not None]
    out["candidate_cpu_during_baseline_s"] = sum(used) if used else None
    return out


def baseline_alone(side: ArenaSide | WorkerSide, sc: SamplerConfig, seed: int, blocks: int = 5) -> list[float]:
    """Per-iteration times of the baseline before the candidate is loaded (A/A reference)."""
    side.run_block(1, seed)  # the first call pays for cold caches and page faults
    iters = 1
    while side.run_block(iters, seed) * iters * 1e-9 < sc.min_block_s and iters < sc.max_iters_per_block:
        iters = min(sc.max_iters_per_block, iters * 4)
    return [side.run_block(iters, seed + 1 + i) for i in range(blocks)]


def _check_tampering(base: ArenaSide | WorkerSide, cand: ArenaSide | WorkerSide, samples: PairedSamples) -> None:
    # Interference first: a candidate burning CPU between its calls also inflates its own
    # unaccounted time, and the interference is the more specific explanation.
    msg = tamper.cpu_while_baseline_ran(base.blocks)
    if msg:
        raise CandidateRejected("tamper.baseline_interference", msg)
    if isinstance(cand, ArenaSide):
        return   # the scorer's clock decided: work hidden from the worker's timer was paid for
    msg = tamper.unaccounted_time(base.blocks, cand.blocks, samples.n_pairs)
    if msg:
        raise CandidateRejected("tamper.unaccounted_time", msg)


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
    init_seed, probe_seed, *seeds = _derive_seeds(secrets.randbits(62), 2 + cfg.check_seeds)
    program = TaskProgram(spec, device, init_seed=init_seed)
    with _candidate_worker(spec, Path(candidate), cfg) as w:
        try:
            w.start(cfg.load_timeout_s)
            _load(w, spec, device, Path(candidate), cfg, init_seed, probe_seed)
            return gate(w, program, seeds, cfg.call_timeout_s)
        except CandidateRejected as exc:
            return 0, [Failure(exc.reason, exc.message)]
