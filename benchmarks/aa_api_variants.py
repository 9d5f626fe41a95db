"""#38's open question: does the A/A of a score lean toward the candidate, and which setting makes it?

Scores tasks/row_softmax's baseline as the candidate through the API (`perfbench.pipeline.score`),
with the s_ref from bench_configs (`table`), alternating the variants below round by round.  Per
score: the speedup and CI, the pairs, the mean ln(t_base / t_cand) of the baseline-first (AB)
and candidate-first (BA) pairs and their half-sum (the side offset, which pairing does not
remove); then per variant: how many speedups exceed 1, the mean ln s and the median |ln s|.

    python benchmarks/aa_api_variants.py [ROUNDS]     (from the repository root)
"""
import math
import statistics
import sys
import time

import numpy as np

from perfbench.pipeline.config import ScoreConfig
from perfbench.pipeline.score import score

TASK = "tasks/row_softmax"
# (Without the sandbox the baseline-as-candidate is rejected: no cpuset, so torch's threads
# exceed the task's one; that variant is not here for that reason.)
VARIANTS = {"default": {}, "no_stop": {"stop_early": False}}


def main(rounds: int) -> None:
    rows = {name: [] for name in VARIANTS}
    for r in range(rounds):
        for name in (list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))):
            t0 = time.perf_counter()
            res = score(TASK, f"{TASK}/baseline.py", ScoreConfig(s_ref_policy="table", **VARIANTS[name]))
            wall = time.perf_counter() - t0
            if res.comparison is None:
                print(f"{r} {name:10s} {res.verdict}: {res.reasons}", flush=True)
                continue
            smp = res.comparison.samples
            lr = np.log(np.asarray(smp.baseline_ns) / np.asarray(smp.candidate_ns))
            first = np.asarray(smp.baseline_first, dtype=bool)
            ab, ba = float(lr[first].mean()), float(lr[~first].mean())
            rows[name].append((res.speedup.value, ab, ba))
            print(f"{r} {name:10s} s={res.speedup.value:.4f} CI [{res.speedup.low:.3f}, {res.speedup.high:.3f}] "
                  f"{smp.n_pairs} pairs AB {ab:+.4f} BA {ba:+.4f} side {(ab + ba) / 2:+.4f} {wall:.1f}s", flush=True)
    print()
    for name, got in rows.items():
        if not got:
            continue
        ln_s = [math.log(s) for s, _, _ in got]
        print(f"{name:10s} n={len(got)} s>1 {sum(s > 1 for s, _, _ in got)}/{len(got)} mean ln s "
              f"{statistics.mean(ln_s):+.4f} median |ln s| {100 * statistics.median(abs(x) for x in ln_s):.2f}% "
              f"side offset {statistics.mean((ab + ba) / 2 for _, ab, ba in got):+.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
