"""A/B of two checkouts: does a change move the speedups it reports, and what did it save?

The rule (benchmarks/results/cost.md, "where a score's time goes"): anything that changes what the
scorer does between timed blocks needs an A/B of speedups, not only of wall time.  This runs `perfbench score` (the CLI, a fresh
interpreter per score, as a user runs it) from two checkouts alternately, BEFORE then AFTER in
even pairs and AFTER then BEFORE in odd ones, so that a host whose speed drifts during the run
loads both sides alike.  Each checkout scores with its own `.venv` (`make install` in it), or
with `--python`'s interpreter for both: `python -m perfbench` in a checkout imports that
checkout's perfbench, and its workers import the same one.  (Not a `.venv` symlinked into a
checkout: the sandbox shows the interpreter's real path only.)  Prints
every score, then the paired mean and standard error of log(after/before) speedup and of the
wall-time difference.

    python benchmarks/checkout_ab.py BEFORE_CHECKOUT AFTER_CHECKOUT [--pairs 8]
        [--task tasks/row_softmax] [--candidate tasks/row_softmax/solution.py] [--python PY] [--s-ref table]
"""
import argparse
import math
import statistics
from pathlib import Path

import score_wall   # (this script's directory is on sys.path)


def one_score(checkout: Path, task: str, candidate: str, python: str,
              extra: tuple[str, ...] = ()) -> tuple[float, float, int, float]:
    """(wall s, speedup, worker processes run, the CI's log half-width) of one CLI score run
    from `checkout` by `python`."""
    r = score_wall.one_score(Path(task), Path(candidate), ("--quiet", *extra), python, checkout)
    if r["exit"] != 0 or r["speedup"] is None:
        raise SystemExit(f"{checkout}: score exited {r['exit']} with no speedup")
    return r["wall_s"], r["speedup"], r["processes"], math.log(r["ci"][1] / r["ci"][0]) / 2


def mean_and_se(xs: list[float]) -> tuple[float, float]:
    return statistics.mean(xs), (statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--task", default="tasks/row_softmax", help="relative to each checkout")
    ap.add_argument("--candidate", default=None, help="relative to each checkout (default: the task's solution.py)")
    ap.add_argument("--python", default=None, help="the interpreter for both checkouts (default: each one's .venv)")
    ap.add_argument("--s-ref", default=None, help="passed to both scores (table: no live third side)")
    args = ap.parse_args()
    extra = ("--s-ref", args.s_ref) if args.s_ref else ()
    candidate = args.candidate or f"{args.task}/solution.py"
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    pythons = {label: args.python or str(root / ".venv" / "bin" / "python") for label, root in sides.items()}
    for label, root in sides.items():
        if not Path(pythons[label]).exists():
            raise SystemExit(f"{label} checkout {root}: no .venv (run `make install` there, or pass --python)")
    runs: dict[str, list[tuple[float, float, int, float]]] = {"before": [], "after": []}
    for i in range(args.pairs):
        for label in (("before", "after") if i % 2 == 0 else ("after", "before")):
            wall, s, processes, half = one_score(sides[label], args.task, candidate, pythons[label], extra)
            runs[label].append((wall, s, processes, half))
            print(f"pair {i} {label:6s}: {wall:5.1f} s  s={s:.3f}  CI +-{100 * half:.1f}%  processes={processes}",
                  flush=True)
    log_ratio = [math.log(a[1] / b[1]) for b, a in zip(runs["before"], runs["after"])]
    wall_diff = [a[0] - b[0] for b, a in zip(runs["before"], runs["after"])]
    (m_s, se_s), (m_w, se_w) = mean_and_se(log_ratio), mean_and_se(wall_diff)
    for label, rs in runs.items():
        print(f"{label:6s}: median wall {statistics.median(r[0] for r in rs):.1f} s, "
              f"median speedup {statistics.median(r[1] for r in rs):.3f}, "
              f"median CI half-width {100 * statistics.median(r[3] for r in rs):.1f}% (log)")
    print(f"{args.pairs} pairs: mean log(after/before) speedup {m_s:+.4f} (standard error {se_s:.4f}); "
          f"wall after - before {m_w:+.2f} s (standard error {se_w:.2f})")


if __name__ == "__main__":
    main()
