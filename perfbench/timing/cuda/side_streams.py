"""GPU work a call hid from the timed window: found in a profile of one call (the gate runs it).

The timer's events bracket the work on its stream S between the hold kernel and the end marker.
A candidate that launches on another stream, or launches after its call returned (a thread, a
callback), does work the events do not see.  `outside_window` reads the device activity of one
profiled, timed call (torch.profiler / CUPTI records, as a Chrome trace) and names every kernel,
copy or memset that ran on another stream than S or started after the end marker.  Ours (the
flush before the hold, the hold, the marker, the clock probe) are recognised by name and place.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

from .timer import CudaEventTimer

HOLD_KERNEL = "perfbench_hold"
END_KERNEL = "perfbench_window_end"
PROBE_KERNEL = "perfbench_clock_probe"
_DEVICE_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
# Work launched late (by a thread or a host callback) has this long to show up in the profile.
LATE_WORK_WAIT_S = 0.05


@dataclass(frozen=True)
class GpuActivity:
    kind: str          # kernel | memcpy | memset
    name: str
    stream: int
    start_us: float
    end_us: float


def activities_from_trace(trace: dict[str, Any]) -> list[GpuActivity]:
    """The device activities of a Chrome trace exported by torch.profiler, in start order."""
    acts = []
    for ev in trace.get("traceEvents", []):
        kind = _DEVICE_CATEGORIES.get(ev.get("cat"))
        if kind is None or ev.get("ph") != "X":
            continue
        stream = (ev.get("args") or {}).get("stream")
        if not isinstance(stream, int):
            continue
        start = float(ev.get("ts", 0.0))
        acts.append(GpuActivity(kind, str(ev.get("name", "?")), stream, start, start + float(ev.get("dur", 0.0))))
    return sorted(acts, key=lambda a: a.start_us)


def outside_window(acts: list[GpuActivity]) -> list[str] | None:
    """One line per activity of the call outside its timed window; None when the profile holds
    no window of ours (the profiler saw nothing: the check could not run)."""
    ends = [a for a in acts if END_KERNEL in a.name]
    if not ends:
        return None
    # The timed stream is the marker's (held or not); the last window is the one timed (a call
    # whose hold timed out is timed again).
    end = ends[-1]
    s = end.stream
    findings = []
    for a in acts:
        if any(k in a.name for k in (HOLD_KERNEL, END_KERNEL, PROBE_KERNEL)):
            continue
        if a.stream != s:
            findings.append(f"{a.kind} {a.name!r} ran on stream {a.stream}, not on the timed stream {s}")
        elif a.start_us >= end.start_us:
            findings.append(f"{a.kind} {a.name!r} started after the timed window ended")
        # On S before the window: the L2 flush (ours; the call itself is enqueued after the hold).
    return findings


def profile_timed_call(timer: CudaEventTimer, fn: Callable, args: tuple,
                       flush: Callable[[], None] | None) -> list[GpuActivity]:
    """Time one call under torch.profiler (CUDA activities) and return its device activities."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof, timer.marking_windows():
        timer.time_block(fn, [args], flush)
        time.sleep(LATE_WORK_WAIT_S)
        torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    return activities_from_trace(trace)
