"""#59: where a score's CI width comes from on this host, and what a narrower one would cost.

Runs `--runs` CLI scores of a task's solution for each `--processes K` (alternated), with early
stopping on R_perf off (`--r-ci 0`), and reads from each verdict and its progress lines:
- the CI half-width (log scale) and the speedup;
- `pair SD`: the SD of the period-corrected ln ratios within a process, pooled over processes;
- `proc SD`: the SD of the processes' median ln speedups, against `from pairs`, what the pairs'
  own noise alone gives a median of that many pairs (1.2533 SD / sqrt(n)): where the two agree,
  the processes differ by their pairs' noise, not by a per-process (layout) effect;
- `overhead`: per timed process, the seconds from "starting workers (j of K)" to its "timing
  AB-BA pairs" (forking, loading both sides, null blocks), and `timed`: from there to the next
  process's start (warm-up and pairs);
- `per pair`: timed seconds per pair.
Then a projection, from the pooled figures: the pairs N and processes k a 95% t interval of
half-width h needs (h = t(k-1) * 1.2533 * pair SD / sqrt(N), N split evenly), and the wall
they would take (the gate's part + k * overhead + N * per pair).

    python benchmarks/process_noise.py [--runs 4] [--processes 3 8] [--task tasks/row_softmax] [--out FILE.json]
"""
import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

REPO = Path(__file__).resolve().parents[1]


def one(task: Path, k: int, python: str, cwd: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "v.json"
        t0 = time.perf_counter()
        proc = subprocess.Popen([python, "-m", "perfbench", "score", str(task), str(task / "solution.py"),
                                 "--processes", str(k), "--r-ci", "0", "--s-ref", "table", "--out", str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd)
        starts, timing = [], []
        for line in proc.stderr:
            now = time.perf_counter() - t0
            for part in line.replace("\r", "\n").splitlines():
                if "starting workers (" in part and " of " in part:
                    starts.append(now)
                elif "timing AB-BA pairs" in part:
                    timing.append(now)
        proc.wait()
        wall = time.perf_counter() - t0
        v = json.loads(out.read_text())
    smp = v["comparison"]["samples"]
    lr = np.log(np.asarray(smp["baseline_ns"]) / np.asarray(smp["candidate_ns"]))
    first = np.asarray(smp["baseline_first"], dtype=bool)
    procs = np.asarray(smp["processes"])
    resid, medians, sizes = [], [], []
    for p in np.unique(procs):
        x, f = lr[procs == p], first[procs == p]
        shift = (np.median(x[f]) - np.median(x[~f])) / 2 if f.any() and (~f).any() else 0.0
        x = x - np.where(f, shift, -shift)
        medians.append(float(np.median(x)))
        sizes.append(x.size)
        resid.extend(x - np.median(x))
    ends = starts[1:] + [wall]
    return {"samples": {k: smp[k] for k in ("baseline_ns", "candidate_ns", "baseline_first", "processes")},
            "ci": v["ci"], "wall": wall, "s": v["speedup"], "half": 0.5 * math.log(v["ci"][1] / v["ci"][0]),
            "pair_sd": float(np.std(resid, ddof=1)), "proc_sd": float(np.std(medians, ddof=1)),
            "pairs": int(lr.size), "n_per_proc": statistics.mean(sizes),
            "overhead": [t - s for s, t in zip(starts, timing)],
            "timed": [e - t for t, e in zip(timing, ends)], "gate": starts[0] if starts else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--processes", type=int, nargs="+", default=[3, 8])
    ap.add_argument("--task", type=Path, default=REPO / "tasks" / "row_softmax")
    ap.add_argument("--checkout", type=Path, default=REPO)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out", type=Path, help="write every run (its samples too) here as JSON")
    args = ap.parse_args()
    rows: dict[int, list[dict]] = {k: [] for k in args.processes}
    for i in range(args.runs):
        for k in (args.processes if i % 2 == 0 else args.processes[::-1]):
            r = one(args.task.resolve(), k, args.python, args.checkout)
            rows[k].append(r)
            print(f"K={k:2d} run {i + 1}: wall {r['wall']:5.1f} s  s={r['s']:.3f}  half {100 * r['half']:5.1f}%  "
                  f"pairs {r['pairs']}  pair SD {100 * r['pair_sd']:4.1f}%  proc SD {100 * r['proc_sd']:4.1f}%  "
                  f"overhead {statistics.median(r['overhead']):.2f} s  timed {statistics.median(r['timed'][:-1] or r['timed']):.2f} s",
                  flush=True)
    if args.out:
        args.out.write_text(json.dumps({str(k): rs for k, rs in rows.items()}))
    print("\n K  wall    half (median, max)  pair SD  proc SD  from pairs  overhead/proc  per pair  before 1st process")
    pooled = [r for rs in rows.values() for r in rs]
    for k, rs in rows.items():
        pair_sd = statistics.median(r["pair_sd"] for r in rs)
        from_pairs = 1.2533 * pair_sd / math.sqrt(statistics.mean(r["n_per_proc"] for r in rs))
        per_pair = statistics.median(sum(r["timed"]) / r["pairs"] for r in rs)
        print(f"{k:2d}  {statistics.median(r['wall'] for r in rs):5.1f} s  {100 * statistics.median(r['half'] for r in rs):5.1f}%, "
              f"{100 * max(r['half'] for r in rs):5.1f}%     {100 * pair_sd:5.1f}%  {100 * statistics.median(r['proc_sd'] for r in rs):5.1f}%  "
              f"{100 * from_pairs:8.1f}%   {statistics.median(o for r in rs for o in r['overhead']):9.2f} s  "
              f"{1000 * per_pair:5.0f} ms  {statistics.median(r['gate'] for r in rs):5.1f} s")
    sd = statistics.median(r["pair_sd"] for r in pooled)
    over = statistics.median(o for r in pooled for o in r["overhead"])
    per_pair = statistics.median(sum(r["timed"]) / r["pairs"] for r in pooled)
    gate = statistics.median(r["gate"] for r in pooled)
    print(f"\nprojection (pair SD {100 * sd:.1f}%, {over:.2f} s a process, {1000 * per_pair:.0f} ms a pair, "
          f"{gate:.1f} s before the first process):")
    for h in (0.06, 0.04, 0.03):
        for k in (3, 6, 10, 16):
            n = math.ceil((sps.t.ppf(0.975, k - 1) * 1.2533 * sd / h) ** 2)
            print(f"  half {100 * h:.0f}%  k={k:2d}: {n:4d} pairs, wall ~{gate + k * over + n * per_pair:5.1f} s")


if __name__ == "__main__":
    main()
