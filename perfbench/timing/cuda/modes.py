"""How a CUDA task's calls are timed (timing/cuda/timer.py has the timer): the choice "auto" makes among
the modes a task may ask for (their names are part of the task format, tasks.TIMING_MODES)."""
from __future__ import annotations

from ...task.spec import TIMING_MODES as MODES

# CUDA event timestamps resolve ~0.5 us (CUDA programming guide).
EVENT_RESOLUTION_NS = 500.0
# "auto" picks graph replay when the baseline's call is within this many event resolutions.
AUTO_GRAPH_BELOW = 10


def choose_mode(requested: str, baseline_ns_per_call: float | None) -> str:
    """The timing mode for a run: as requested, or for "auto" graph replay when the baseline's
    call is so short that event resolution and per-launch gaps dominate it."""
    if requested not in MODES:
        raise ValueError(f"timing mode must be one of {', '.join(MODES)}, got {requested!r}")
    if requested != "auto":
        return requested
    if baseline_ns_per_call is not None and baseline_ns_per_call < AUTO_GRAPH_BELOW * EVENT_RESOLUTION_NS:
        return "graph"
    return "events"
