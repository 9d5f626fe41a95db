"""#38's A/A from the CLI: `perfbench score TASK BASELINE.py`, the task's baseline scored as the
candidate, from two checkouts alternately (BEFORE then AFTER in even rounds, AFTER then BEFORE
in odd ones).  Per score: the speedup and its CI, the mean ln(t_base / t_cand) of the
baseline-first (AB) and candidate-first (BA) pairs, and the first-block effect, computed here
from the raw samples the same way for both checkouts (an older verdict has no `baseline_first`:
its pairs ran AB, BA, ... in each process).  Then, per checkout: CI coverage of 1, median
|ln s|, median wall.

    python benchmarks/schedule_cli_aa.py BEFORE AFTER [--rounds 8] [--task tasks/row_softmax] [--python PY] [--s-ref table]

`... means` re-scores the same samples with protocol 5's period correction (the orders' means,
benchmarks/period_means.py), so the estimators compare without a second run's noise.
`per-proc SD` is the spread of one worker process's period-corrected median speedup around its
score's mean (ln units, pooled over the scores): the between-process noise the hierarchical CI
pays for.  `from pairs` is what the processes' own pair noise alone would give it: where the two
agree, no "lottery" per process needs explaining.
"""
import argparse
import math
import statistics
from pathlib import Path

import numpy as np

import score_wall   # (this script's directory is on sys.path)
from period_means import speedup_with_means
from perfbench.core import crossover


def orders(samples: dict) -> np.ndarray:
    if samples.get("baseline_first"):
        return np.asarray(samples["baseline_first"], dtype=bool)
    procs = samples.get("processes") or [0] * len(samples["baseline_ns"])
    return np.asarray([sum(1 for q in procs[:i] if q == p) % 2 == 0 for i, p in enumerate(procs)])


def one(checkout: Path, task: str, python: str, s_ref: str | None) -> dict:
    extra = ("--quiet",) + (("--s-ref", s_ref) if s_ref else ())
    r = score_wall.one_score(Path(task), Path(f"{task}/baseline.py"), extra, python, checkout)
    v = r["verdict"]
    if r["exit"] != 0 or not v.get("comparison"):
        raise SystemExit(f"{checkout}: score exited {r['exit']}: {v.get('reasons')}")
    smp = v["comparison"]["samples"]
    lr = np.log(np.asarray(smp["baseline_ns"]) / np.asarray(smp["candidate_ns"]))
    first = orders(smp)
    ab, ba = float(lr[first].mean()), float(lr[~first].mean())
    reported = v["comparison"]["extra"].get("worker_reported_ns") or {}
    base_rep, cand_rep = (np.asarray(reported.get(side) or [np.nan] * len(lr)) for side in ("baseline", "candidate"))
    places = {"base_first": base_rep[first], "cand_first": cand_rep[~first],
              "base_second": base_rep[~first], "cand_second": cand_rep[first]}
    procs = np.asarray(smp.get("processes") or [0] * len(lr))
    proc_ln, proc_se = per_process(lr, first, procs)
    return {"wall": r["wall_s"], "s": v["speedup"], "ci": v["ci"], "proc_se": proc_se,
            "s_means": speedup_with_means(smp["baseline_ns"], smp["candidate_ns"], first, procs),
            "proc_dev": [x - float(np.mean(proc_ln)) for x in proc_ln], "ab": ab, "ba": ba, "period": (ab - ba) / 2,
            "places": places,
            "pairs": len(lr), "reported": (v["comparison"]["summary"].get("period_effect") or {}).get("first_over_second"),
            "warnings": [w.split(":")[0] for w in v.get("warnings", []) if w.startswith("order_effect")]}


def per_process(lr: np.ndarray, first: np.ndarray, procs: np.ndarray) -> tuple[list[float], list[float]]:
    """Each process's period-corrected median log ratio (as the verdict corrects it), and the
    standard error that median would have from its own pairs' spread alone (1.25 sd / sqrt(n))."""
    medians, ses = [], []
    for q in np.unique(procs):
        x, f = lr[procs == q], first[procs == q]
        x = crossover.corrected(x, f)
        medians.append(float(np.median(x)))
        ses.append(float(1.2533 * np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else float("nan"))
    return medians, ses


def per_process_sd(runs: list[dict]) -> tuple[float, float]:
    """Pooled SD of a process's corrected median about its score's mean (n - 1 per score), and
    what the processes' own pair noise alone would give (their pooled standard error)."""
    devs = [d for r in runs for d in r["proc_dev"]]
    dof = sum(len(r["proc_dev"]) - 1 for r in runs)
    ses = [se for r in runs for se in r["proc_se"]]
    if dof <= 0:
        return float("nan"), float("nan")
    return math.sqrt(sum(d * d for d in devs) / dof), math.sqrt(sum(se * se for se in ses) / len(ses))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--task", default="tasks/row_softmax")
    ap.add_argument("--python", required=True, help="the interpreter for both checkouts")
    ap.add_argument("--s-ref", default=None, help="passed to both scores (e.g. table: no live third side)")
    args = ap.parse_args()
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for i in range(args.rounds):
        for label in (("before", "after") if i % 2 == 0 else ("after", "before")):
            r = one(sides[label], args.task, args.python, args.s_ref)
            runs[label].append(r)
            print(f"round {i} {label:6s}: {r['wall']:5.1f} s  s={r['s']:.4f} CI [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] "
                  f"{r['pairs']} pairs  AB {r['ab']:+.4f}  BA {r['ba']:+.4f}  first/second {math.exp(r['period']):.4f}"
                  f"  reported {r['reported'] and round(r['reported'], 4)}  means' s={r['s_means']:.4f}"
                  f" {' '.join(r['warnings'])}", flush=True)
    print(f"\nCLI A/A of {args.task}'s baseline, {args.rounds} scores per checkout")
    print(f"  {'':8s} {'covers 1':>9s} {'med |ln s|':>11s} {'... means':>10s} {'mean AB':>8s} {'mean BA':>8s} {'first/second':>13s} {'med wall':>9s} {'per-proc SD':>12s} {'from pairs':>11s}")
    for label, rs in runs.items():
        cover = sum(r["ci"][0] <= 1.0 <= r["ci"][1] for r in rs)
        print(f"  {label:8s} {cover:>6d}/{len(rs):<2d} {100 * statistics.median(abs(math.log(r['s'])) for r in rs):>10.2f}% "
              f"{100 * statistics.median(abs(math.log(r['s_means'])) for r in rs):>9.2f}% "
              f"{statistics.mean(r['ab'] for r in rs):>+8.4f} {statistics.mean(r['ba'] for r in rs):>+8.4f} "
              f"{math.exp(statistics.mean(r['period'] for r in rs)):>13.4f} {statistics.median(r['wall'] for r in rs):>8.1f}s "
              + "".join(f"{100 * x:>11.2f}%" for x in per_process_sd(rs)))
    print("\nworker-reported ms per call, median over every score's blocks, by side and place in the pair")
    for label, rs in runs.items():
        med = {k: 1e-6 * float(np.nanmedian(np.concatenate([r["places"][k] for r in rs]))) for k in rs[0]["places"]}
        print(f"  {label:8s} first: baseline {med['base_first']:.3f} candidate {med['cand_first']:.3f}   "
              f"second: baseline {med['base_second']:.3f} candidate {med['cand_second']:.3f}")


if __name__ == "__main__":
    main()
