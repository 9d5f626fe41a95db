"""The AB-BA schedule: which side runs first in each pair.

Pair 0 runs baseline then candidate, pair 1 candidate then baseline, and so on.  Over every two
pairs each side runs once in each position, so a linear drift and any first-position advantage
(warm caches, clock ramp) cancel in the median of the per-pair ratios.
"""
from __future__ import annotations

BASELINE = "baseline"
CANDIDATE = "candidate"


def pair_order(i: int) -> tuple[str, str]:
    """Order of the two sides in pair `i` (0-based)."""
    if i < 0:
        raise ValueError(f"pair index must be >= 0, got {i}")
    return (BASELINE, CANDIDATE) if i % 2 == 0 else (CANDIDATE, BASELINE)


def abba_order(n_pairs: int) -> list[tuple[str, str]]:
    return [pair_order(i) for i in range(n_pairs)]
