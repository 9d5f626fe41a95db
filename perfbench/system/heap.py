"""The scorer's heap: keep freed memory for the next allocation instead of returning it to the kernel.

Between timed blocks the scorer makes fresh inputs and float64 oracles: tens of MB of
short-lived tensors per block, which glibc's defaults serve from fresh mmap pages (a page fault
and a zeroed page per 4 KiB).  Keeping freed memory made the float64 softmax oracle ~4x faster
here (benchmarks/results/cost.md, "where a score's time goes"; benchmarks/scorer_heap.py).

Only the scorer's own process is changed (glibc cannot go back to its dynamic thresholds).
Workers keep the allocator's defaults: how a kernel allocates is part of what is timed, and
every s_ref was measured with them.  After each score `malloc_trim` hands free pages back.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from . import host

# Allocations below this come from the heap and are reused once freed; the heap is never trimmed
# below this much free memory at its top.
KEEP_BYTES = 1 << 30


def fix_thresholds(mmap_bytes: int, trim_bytes: int) -> bool:
    """Fix glibc's mmap and trim thresholds for this process, which turns off their drift
    (idempotent).  False where the C library is not glibc (no `mallopt`) or refuses."""
    return host.mallopt(host.M_MMAP_THRESHOLD, mmap_bytes) and host.mallopt(host.M_TRIM_THRESHOLD, trim_bytes)


def keep_freed_memory() -> bool:
    """The scorer's thresholds (KEEP_BYTES both); False only costs speed."""
    return fix_thresholds(KEEP_BYTES, KEEP_BYTES)


def release_freed_memory() -> None:
    """Return the heap's free pages to the kernel (glibc's `malloc_trim`; elsewhere nothing)."""
    host.malloc_trim()


@contextlib.contextmanager
def scorer_heap() -> Iterator[None]:
    """Freed memory kept for reuse while a score runs, and its free pages handed back when it
    ends (the thresholds stay: see the module's docstring)."""
    keep_freed_memory()
    try:
        yield
    finally:
        release_freed_memory()
