"""Protocol 5's speedup estimator, kept to re-analyse samples: each process's period effect was
half the difference of the two orders' *means* (protocol 6 takes their medians,
perfbench.core.crossover.period_shift).  Scoring the same samples both ways compares the
estimators without the run-to-run noise of a second run.

`means_shift()` swaps the one estimate perfbench's statistics take the shift from, so every
statistic (median, bootstrap CI, per process) is computed by the same code as a verdict's."""
from contextlib import contextmanager

import numpy as np

from perfbench.core import crossover, stats


@contextmanager
def means_shift():
    medians = crossover.period_shift
    crossover.period_shift = lambda ab, ba: (np.mean(ab, axis=-1) - np.mean(ba, axis=-1)) / 2.0
    try:
        yield
    finally:
        crossover.period_shift = medians


def speedup_with_means(base, cand, baseline_first, processes=()) -> float:
    with means_shift():
        return stats.median_speedup(base, cand, baseline_first, processes)
