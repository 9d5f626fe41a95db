"""The orchestrator: `compare()` (trusted, in-process) and, later, `score()` and `calibrate()`."""
from __future__ import annotations

import secrets
from typing import Any, Callable

from ..core.errors import UsageError
from ..core.results import ComparisonResult
from ..device.check import check_device
from ..device.fingerprint import fingerprint
from ..timing.cuda.timer import CudaEventTimer
from ..timing.flush import flusher_for
from ..timing.inprocess import InProcessSide
from ..timing.sampler import ProgressFn, SamplerConfig, sample_pairs
from ..timing.timers import CpuTimer, Timer


def make_timer(device: str) -> Timer:
    # In-process timing trusts its code: no end-of-window digests (nothing fetches an output later).
    return CudaEventTimer(device, digests=False) if device.startswith("cuda") else CpuTimer()


def make_flusher(device: str, cfg: SamplerConfig, timer: Timer) -> Callable[[], None] | None:
    return None if timer.simulated else flusher_for(device, cfg.cache_flush)


def compare(baseline: Callable[..., Any], candidate: Callable[..., Any],
            make_inputs: Callable[[int], tuple], *, device: str = "cpu",
            config: SamplerConfig | None = None, seed: int | None = None,
            timer: Timer | None = None, labels: tuple[str, str] = ("baseline", "candidate"),
            progress: ProgressFn | None = None) -> ComparisonResult:
    """Time `candidate` against `baseline` with AB-BA pairs, in this process.

    For trusted code only (a notebook, another harness): nothing here defends against a
    candidate that games the timer; `perfbench score` does.  `make_inputs(seed)` returns one
    fresh argument tuple; both sides of a pair get the same inputs.  The result's `.speedup` is
    t_baseline / t_candidate, with `.ci` and `.p_value`.
    """
    cfg = config or SamplerConfig()
    if timer is None:
        device = check_device(device)
        timer = make_timer(device)
    flush = make_flusher(device, cfg, timer)
    if seed is None:
        seed = secrets.randbits(62)
    base_side = InProcessSide(labels[0], baseline, make_inputs, timer, flush)
    cand_side = InProcessSide(labels[1], candidate, make_inputs, timer, flush)
    samples = sample_pairs(base_side, cand_side, cfg, seed=seed, progress=progress, clock=timer.clock_s)
    if base_side.output_signature != cand_side.output_signature:
        raise UsageError(f"{labels[0]} returns {base_side.output_signature} but {labels[1]} returns "
                         f"{cand_side.output_signature}: they do not compute the same thing")
    return ComparisonResult(baseline=labels[0], candidate=labels[1], device=device, timer=timer.name,
                            seed=seed, samples=samples, config=cfg.to_dict(),
                            fingerprint={} if timer.simulated else fingerprint(device))
