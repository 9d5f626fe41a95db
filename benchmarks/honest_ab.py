"""#39's honest-candidate check: 20 honest candidates, each scored by the CLI from two checkouts
(BEFORE, AFTER) one after the other, alternating which goes first.  None may be flagged
(rejected, or a sandbox warning), and no speedup may move: AFTER's CI must overlap BEFORE's.

Multi-threaded torch, large temporaries, Triton under the interpreter (tests/fixtures/candidates
on tests/fixtures/tiny_task), C++ extensions (csr_spmv's, csr_spmm's and row_layernorm's
solutions), and every shipped CPU perf task's solution, starter and baseline (A/A).

    python benchmarks/honest_ab.py BEFORE_CHECKOUT AFTER_CHECKOUT [--python PY] [--only NAME ...]
"""
import argparse
from pathlib import Path

import score_wall   # (this script's directory is on sys.path)

TINY = "tests/fixtures/tiny_task"
QUICK = ("--pairs", "6", "--max-pairs", "6", "--processes", "1", "--timeout", "120")
CANDIDATES = [
    *[(f"tiny/{n}", TINY, f"tests/fixtures/candidates/{n}.py", QUICK) for n in
      ("honest_fast", "honest_slow", "honest_threads", "honest_large_temporaries", "honest_triton")],
    *[(f"{t}/solution", f"tasks/{t}", f"tasks/{t}/solution.py", ()) for t in
      ("csr_spmm", "csr_spmv", "row_layernorm", "row_softmax", "small_gemm")],
    *[(f"{t}/starter", f"tasks/{t}", f"tasks/{t}/starter.py", ()) for t in
      ("csr_spmm", "csr_spmv", "row_layernorm", "row_softmax", "small_gemm")],
    *[(f"row_softmax/{n}", "tasks/row_softmax", f"examples/{n}.py", ()) for n in ("softmax_fused", "softmax_unfused")],
    *[(f"{t}/baseline (A/A)", f"tasks/{t}", f"tasks/{t}/baseline.py", ()) for t in ("csr_spmv", "row_softmax", "small_gemm")],
]


def describe(r: dict) -> tuple[str, str]:
    v = r["verdict"]
    flags = [x["code"] for x in v.get("reasons", [])] + [w for w in v.get("warnings", []) if w.startswith("sandbox")]
    s, ci = r["speedup"], r["ci"]
    text = f"{s:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if s is not None and len(ci) == 2 else "-"
    return text, ",".join(flags) or "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--python", default=None, help="the interpreter for both checkouts (default: each one's .venv)")
    ap.add_argument("--only", nargs="*", help="substrings of candidate names")
    args = ap.parse_args()
    roots = {"before": args.before.resolve(), "after": args.after.resolve()}
    chosen = [c for c in CANDIDATES if not args.only or any(o in c[0] for o in args.only)]
    flagged = moved = 0
    print(f"{'candidate':32s} {'before':24s} {'after':24s} flags (after)")
    for i, (name, task, cand, extra) in enumerate(chosen):
        got = {}
        for label in (("before", "after") if i % 2 == 0 else ("after", "before")):
            python = args.python or str(roots[label] / ".venv" / "bin" / "python")
            got[label] = score_wall.one_score(Path(task), Path(cand), ("--quiet", *extra), python, roots[label])
        (b, _), (a, flags) = describe(got["before"]), describe(got["after"])
        cb, ca = got["before"]["ci"], got["after"]["ci"]
        overlap = len(cb) == 2 and len(ca) == 2 and ca[0] <= cb[1] and cb[0] <= ca[1]
        flagged += flags != "-" or got["after"]["exit"] != 0
        moved += not overlap
        print(f"{name:32s} {b:24s} {a:24s} {flags}{'' if overlap else '  MOVED'}", flush=True)
    print(f"\n{len(chosen)} honest candidates: {flagged} flagged after, {moved} with CIs that do not overlap")


if __name__ == "__main__":
    main()
