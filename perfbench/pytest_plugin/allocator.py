"""A steady heap for the whole test process, so a saved run and today's run measure the same thing.

glibc adjusts its mmap and trim thresholds as a process runs: in some processes a freed 256 KB
output goes back to the OS and the next call page-faults it in again, in others it is reused, so
one kernel reads several times slower in some processes than in others, at random: no threshold
on an unpaired comparison absorbs that.  Fixing both thresholds at the start of the session makes
every process reuse it (benchmarks/results/pytest_plugin.md, "The pytest plugin's steady heap").
Paired comparisons never needed it (both sides share the heap).
"""
from __future__ import annotations

from ..system import heap, host

MMAP_THRESHOLD = 64 << 20   # allocations below this come from the heap, and are reused
TRIM_THRESHOLD = 128 << 20  # free memory at the heap's top is kept up to this


def steady_heap() -> str:
    """Fix glibc's thresholds (turning off their drift).  Returns the policy now in force:
    "steady" or "system (why)"."""
    if host.function("mallopt") is None:
        return "system (no glibc mallopt here)"
    if not heap.fix_thresholds(MMAP_THRESHOLD, TRIM_THRESHOLD):
        return "system (mallopt refused)"
    return "steady"
