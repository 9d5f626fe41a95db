"""What one worker process's blocks tell the verdict besides their times: the sandbox it ran in,
the tamper checks over its blocks, the clock warnings, the per-block diagnostics, and the
baseline timed alone (the A/A reference)."""
from __future__ import annotations

from ..core import tamper
from ..core.errors import CandidateRejected, EnvironmentUnavailable
from ..core.results import PairedSamples
from ..device.clocks import ClockControl
from ..isolation.processes.cpu_threads import CpuThreading
from ..isolation.processes.worker_client import WorkerClient
from ..sides.build import Side
from ..timing.sampler import SamplerConfig, grown_iters
from .config import ScoreConfig


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


def block_diagnostics(base: Side, cand: Side, samples: PairedSamples,
                      solution: Side | None = None) -> dict:
    """What the verdict keeps besides the scored times: the worker-reported times of the paired
    blocks and (CPU) the per-block overhead subtracted from both sides.  (With a live s_ref the
    baseline's last n blocks come from both comparisons' pairs.)"""
    n = samples.n_pairs
    out = {"worker_reported_ns": {"baseline": [b.reported_ns / b.iters for b in base.blocks[-n:]],
                                  "candidate": [b.reported_ns / b.iters for b in cand.blocks[-n:]]}}
    out.update(base.pair_diagnostics(cand, samples.iters_per_block))
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


def baseline_alone(side: Side, sc: SamplerConfig, seed: int, blocks: int = 3) -> list[float]:
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


def check_tampering(base: Side, cand: Side, samples: PairedSamples,
                    threading: CpuThreading | None = None, solution: Side | None = None) -> None:
    # Interference first: a candidate burning CPU between its calls also inflates its own
    # unaccounted time, and the interference is the more specific explanation.  With a live
    # s_ref the solution's blocks count as the baseline's: slowing either pays.
    msg = tamper.cpu_while_baseline_ran(base.blocks + (solution.blocks if solution is not None else []))
    if msg:
        raise CandidateRejected("tamper.baseline_interference", msg)
    msg = (tamper.more_threads_than_allowed(cand.blocks, threading.threads, cand.client.cpu_resolution_s)
           if threading is not None else None)
    if msg:
        raise CandidateRejected("tamper.threads", msg)
    if cand.scorer_clocked:
        return   # the scorer's clock decided: work hidden from the worker's timer was paid for
    msg = (tamper.unaccounted_time(tamper.host_clocked(base.blocks), tamper.host_clocked(cand.blocks), samples.n_pairs)
           or tamper.unaccounted_time_gpu(base.blocks, cand.blocks, samples.n_pairs))
    if msg:
        raise CandidateRejected("tamper.unaccounted_time", msg)
