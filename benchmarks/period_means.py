"""Protocol 5's speedup estimator, kept to re-analyse samples: each process's period effect was
half the difference of the two orders' *means* (protocol 6 takes their medians,
perfbench.core.crossover.period_shift).  Scoring the same samples both ways compares the
estimators without the run-to-run noise of a second run."""
import numpy as np


def speedup_with_means(base, cand, baseline_first, processes=()) -> float:
    lr = np.log(np.asarray(base, dtype=np.float64) / np.asarray(cand, dtype=np.float64))
    first = np.asarray(baseline_first, dtype=bool)
    procs = np.asarray(processes) if len(processes) else np.zeros(lr.size, dtype=int)
    out = lr.copy()
    for q in np.unique(procs):
        m = procs == q
        x, f = lr[m], first[m]
        if f.sum() >= 2 and (~f).sum() >= 2:
            p = (x[f].mean() - x[~f].mean()) / 2.0
            out[m] = np.where(f, x - p, x + p)
    return float(np.exp(np.median(out)))
