"""What a score's speed-of-light section is computed from (docs/speed_of_light.md): the call's
work at the timed size, counted in the scorer, and the two peaks its bound needs, measured here
before any worker is timed."""
from __future__ import annotations

from typing import Any

from ..device.peaks import bound_peaks
from ..task.program import TaskProgram
from ..task.spec import TaskSpec
from ..task.work import count_work


def speed_of_light_inputs(program: TaskProgram, spec: TaskSpec, device: str, seed: int, memo: dict | None = None
                          ) -> tuple[dict[str, Any], str | None]:
    """{"work", "peaks"} for the verdict's `sol`, or ({}, why not): the section is a report, so a
    task whose work cannot be counted still scores.  `memo`: the peaks measured so far in this
    score (device.peaks.bound_peaks)."""
    try:
        work = count_work(program, spec.timed_size, seed)
        peaks = bound_peaks(device, spec.threads, work.bytes, work.dtype if work.flops else None, memo)
    except Exception as exc:  # noqa: BLE001 - task code and the device; the score goes on without it
        return {}, f"speed of light not computed: {type(exc).__name__}: {exc}"
    return {"work": work.to_dict(), "peaks": peaks}, None
