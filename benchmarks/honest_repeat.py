"""Honest candidates scored N times each through the full sandbox: how often is one flagged?

    python benchmarks/honest_repeat.py [N]        (default 20)

Prints one row per candidate: runs, flagged, speedups (min/median/max), sandbox warnings.
"""
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from perfbench.pipeline.score import ScoreConfig, score  # noqa: E402
from perfbench.timing.sampler import SamplerConfig  # noqa: E402

TASK = REPO / "tests" / "fixtures" / "tiny_task"
CANDIDATES = [REPO / "tests" / "fixtures" / "candidates" / f"{n}.py" for n in
              ("honest_fast", "honest_slow", "honest_threads", "honest_large_temporaries", "honest_triton")]
CFG = ScoreConfig(sampler=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.05), call_timeout_s=120, check_seeds=3)


def main(n: int) -> None:
    print(f"{'candidate':28s} {'runs':>4s} {'flagged':>7s} {'s min':>7s} {'s med':>7s} {'s max':>7s}  warnings")
    for cand in CANDIDATES:
        flagged, speedups, warned = [], [], set()
        for _ in range(n):
            r = score(TASK, cand, CFG)
            if r.verdict != "scored":
                flagged.append([x.code for x in r.reasons])
            else:
                speedups.append(r.comparison.speedup)
            warned |= {w for w in r.warnings if w.startswith("sandbox")}
        s = sorted(speedups) or [float("nan")]
        print(f"{cand.stem:28s} {n:4d} {len(flagged):7d} {s[0]:7.3f} {statistics.median(s):7.3f} {s[-1]:7.3f}  "
              f"{sorted(warned) or '-'} {flagged or ''}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
