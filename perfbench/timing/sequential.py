"""Sequential timing (all A, then all B, ratio of medians): what do_bench-style use gives.

perfbench never scores with this; it exists so benchmarks and `selfcheck` can show, in the same
run, how much worse it does than AB-BA pairing under drift.
"""
from __future__ import annotations

import statistics
from typing import Callable

from .sampler import Side


def sequential_speedup(baseline: Side, candidate: Side, *, n_blocks: int, iters: int, seed: int,
                       between: Callable[[], None] | None = None) -> float:
    """t_baseline / t_candidate from n_blocks of A followed by n_blocks of B.

    `between` runs after the A phase (benchmarks start a competing load there to model a
    neighbour arriving half-way).
    """
    a = [baseline.run_block(iters, seed + i) for i in range(n_blocks)]
    if between is not None:
        between()
    b = [candidate.run_block(iters, seed + i) for i in range(n_blocks)]
    return statistics.median(a) / statistics.median(b)
