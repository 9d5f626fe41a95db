"""A steady heap for the whole test process, so a saved run and today's run measure the same thing.

glibc adjusts its mmap and trim thresholds as a process runs: in some processes a freed 256 KB
output goes back to the OS and the next call page-faults it in again, in others it is reused.
Measured here (torch row softmax, 128x512 float32, fresh inputs per call): 42 us in one process,
150 us in the next, at random, which no threshold on an unpaired comparison can absorb (7 of 20
unchanged runs failed against a saved run).  Fixing both thresholds at the start of the session
gave 42 us in 8 of 8 processes.  Paired comparisons never needed it (both sides share the heap).
"""
from __future__ import annotations

from ..core import host

MMAP_THRESHOLD = 64 << 20   # allocations below this come from the heap, and are reused
TRIM_THRESHOLD = 128 << 20  # free memory at the heap's top is kept up to this


def steady_heap() -> str:
    """Fix glibc's thresholds (turning off their drift).  Returns the policy now in force:
    "steady" or "system (why)"."""
    if host.function("mallopt") is None:
        return "system (no glibc mallopt here)"
    if not host.mallopt(host.M_MMAP_THRESHOLD, MMAP_THRESHOLD) or not host.mallopt(host.M_TRIM_THRESHOLD, TRIM_THRESHOLD):
        return "system (mallopt refused)"
    return "steady"
