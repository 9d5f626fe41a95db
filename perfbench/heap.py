"""The scorer's heap: keep freed memory for the next allocation instead of returning it to the kernel.

Between timed blocks the scorer makes fresh inputs and computes float64 oracles of checked
outputs: tens of MB of short-lived tensors per block.  By default glibc serves allocations of
32 MB and more (a float64 copy of a 4M-element output) with fresh pages from mmap, and trims the
heap's free top back to the kernel, so nearly every large tensor costs a page fault per 4 KiB
page and the kernel zeroing it.  Measured on this host (benchmarks/scorer_heap.py): `x.double()`
of a 4M-element float32 tensor 15.5 ms that way and 2.7 ms from kept memory, the float64
softmax oracle 42 vs 10 ms.  The defaults vary from process to process (the upcast took 2.6 to
22 ms in five runs: glibc's dynamic threshold sometimes keeps a chunk that fits); kept memory
took 2.5-3.5 ms in each.

Only the scorer's own process is changed, from its first score on (glibc cannot go back to its
dynamic thresholds; an in-process `compare` later in the same process allocates this way too).
Workers keep the allocator's defaults: how a kernel allocates is part of what is timed, and
every s_ref was measured with them.

Kept memory fragments: a small allocation carved out of a freed large chunk leaves the next
large one to fresh pages, so not every allocation is saved, and the heap can hold more than it
uses.  After each score `malloc_trim` hands the free pages back to the kernel.  Measured on this
host over three in-process scores of row_softmax's solution: RSS after each 296 MB, peak
1051 MB (with the defaults: 551 then 647 MB after, peak 855-903 MB; kept without the trim:
759, 779, 827 MB after).
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from . import host

# Allocations below this come from the heap and are reused once freed; the heap is never trimmed
# below this much free memory at its top.
KEEP_BYTES = 1 << 30


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds for this process (idempotent).  False where the C
    library is not glibc (no `mallopt`), which only costs speed."""
    return host.mallopt(host.M_MMAP_THRESHOLD, KEEP_BYTES) and host.mallopt(host.M_TRIM_THRESHOLD, KEEP_BYTES)


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
