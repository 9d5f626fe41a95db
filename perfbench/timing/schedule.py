"""The AB-BA schedule: which side runs first in each pair.

Every quad (pairs 2q and 2q + 1) is ABBA or BAAB, drawn from the run's seed
(crossover.draw_orders).  At every even stopping point each side has run first in half of the
pairs, so a linear drift and any first-position advantage (warm caches, clock ramp, the
scorer's work at the pair boundary) cancel; and since the order is drawn rather than fixed,
nothing that recurs at a fixed point of the pair cycle (a check every other pair) lines up with
one side.
"""
from __future__ import annotations

from ..core.crossover import draw_orders

BASELINE = "baseline"
CANDIDATE = "candidate"
SOLUTION = "solution"   # --s-ref live: the task's solution, a third side


def pair_orders(seed: int, n_pairs: int) -> list[tuple[str, str]]:
    """The order of the two sides in each of `n_pairs` pairs of the run seeded `seed`."""
    return [(BASELINE, CANDIDATE) if first else (CANDIDATE, BASELINE) for first in draw_orders(seed, n_pairs)]

