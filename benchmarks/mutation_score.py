"""Mutation score of the pure layer (#63): mutmut over the files `[tool.mutmut]` in pyproject.toml
names (core/'s statistics, reward, stopping rule, tamper verdicts, results; task/correctness.py),
against the unit tests it names, on a copy of this checkout.

    make mutation            # or: .venv/bin/python benchmarks/mutation_score.py [--keep DIR] [--jobs N]
    .venv/bin/python benchmarks/mutation_score.py --since before.json --json after.json

`--since` reruns only the mutants an earlier run's --json left alive (survived or no tests) and
takes the earlier run's verdict for the others: valid while the mutated files are unchanged (the
mutants are then the same), since added tests can only kill more.  The report says which run
each verdict came from.

Prints per file the mutants killed, survived, without a covering test and timed out, the score
(killed / (killed + survived + timed out)), the surviving mutants with their diffs (to compare
with benchmarks/equivalent_mutants.txt, the ones no test can kill, each with its reason) and the
score without them.  Not in CI: ~3,000 mutants take about 15 minutes on 2 cores.  Needs mutmut
(`make mutation` installs it into .venv; it is not a dependency of perfbench)."""
from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EQUIVALENT = REPO / "benchmarks" / "equivalent_mutants.txt"
KILLED, SURVIVED, NO_TESTS, TIMEOUT = "killed", "survived", "no tests", "timeout"


def copy_checkout(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        if (REPO / f).is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / f, dest / f)


def mutmut(root: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=root, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1"))
    if check and proc.returncode != 0:
        sys.exit(f"mutmut {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.stdout


def equivalent_names() -> dict[str, str]:
    """benchmarks/equivalent_mutants.txt: `mutant-name  reason` per line (# comments)."""
    out = {}
    for line in EQUIVALENT.read_text().splitlines() if EQUIVALENT.exists() else []:
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, reason = line.partition(" ")
            out[name] = reason.strip()
    return out


def statuses(root: Path) -> dict[str, str]:
    """Every mutant's outcome, from `mutmut results --all true` (`name: status`)."""
    out = {}
    for line in mutmut(root, "results", "--all", "true").splitlines():
        m = re.match(r"\s*(\S+): (.+)$", line)
        if m:
            status = m.group(2).strip()
            out[m.group(1)] = {"killed": KILLED, "survived": SURVIVED, "no tests": NO_TESTS,
                               "timeout": TIMEOUT}.get(status, status)
    return out


def mutant_diffs(root: Path, names: list[str]) -> dict[str, str]:
    """Each mutant's changed lines ("- old | + new"), read from the trampolined copies mutmut
    wrote under mutants/ (one `mutmut show` per mutant takes ~1 s)."""
    sources: dict[str, dict[str, list[str]]] = {}
    out = {}
    for name in names:
        path = root / "mutants" / file_of(name)
        if str(path) not in sources:
            funcs = {}
            try:
                tree = ast.parse(path.read_text())
            except (OSError, SyntaxError):
                tree = ast.Module(body=[], type_ignores=[])
            lines = path.read_text().splitlines() if path.exists() else []
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in node.name:
                    funcs[node.name] = [ln.strip() for ln in lines[node.lineno - 1:node.end_lineno]]
            sources[str(path)] = funcs
        funcs = sources[str(path)]
        short = name.rsplit(".", 1)[-1]
        orig = funcs.get(short.rsplit("__mutmut_", 1)[0] + "__mutmut_orig", [])
        mutant = [ln.replace(short, short.rsplit("__mutmut_", 1)[0] + "__mutmut_orig", 1) for ln in funcs.get(short, [])]
        diff = [ln for ln in difflib.unified_diff(orig, mutant, lineterm="", n=0)
                if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
        out[name] = " | ".join(diff)
    return out


def file_of(name: str) -> str:
    """perfbench.core.stats.x_median_speedup__mutmut_3 -> perfbench/core/stats.py"""
    module = name.split(".x")[0].split(".x\u01c1")[0]
    parts = [p for p in module.split(".") if not p.startswith("x_") and "\u01c1" not in p]
    return "/".join(parts) + ".py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="run in (and keep) this directory; rerunning there resumes")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", type=Path, help="also write every mutant's outcome here")
    ap.add_argument("--since", type=Path, help="an earlier run's --json: rerun only the mutants it left alive")
    args = ap.parse_args()
    earlier = json.loads(args.since.read_text()) if args.since else {}
    root = args.keep or Path(tempfile.mkdtemp(prefix="perfbench-mutmut-"))
    if not (root / "pyproject.toml").exists():
        root.mkdir(parents=True, exist_ok=True)
        copy_checkout(root)
    alive = sorted(n for n, st in earlier.items() if st in (SURVIVED, NO_TESTS))
    t0 = time.monotonic()
    mutmut(root, "run", "--max-children", str(args.jobs), *alive, check=False)
    wall = time.monotonic() - t0
    outcome = statuses(root)
    if earlier:   # the earlier verdicts of what was not rerun
        outcome = {n: (outcome.get(n, st) if n in alive else st) for n, st in earlier.items()}
        print(f"reran the {len(alive)} mutants {args.since} left alive; {len(earlier) - len(alive)} verdicts from it")
    if not outcome:
        sys.exit("mutmut produced no results (is it installed? `make mutation` installs it)")
    equivalent = equivalent_names()
    by_file: dict[str, Counter] = defaultdict(Counter)
    for name, status in outcome.items():
        by_file[file_of(name)][status] += 1
    print(f"mutmut over {len(outcome)} mutants in {wall:.0f} s ({root})\n")
    print(f"{'file':36s} {'killed':>7s} {'survived':>9s} {'no tests':>9s} {'timeout':>8s} {'score':>7s}")
    total = Counter()
    for f in sorted(by_file):
        c = by_file[f]
        total.update(c)
        judged = c[KILLED] + c[SURVIVED] + c[TIMEOUT]
        print(f"{f:36s} {c[KILLED]:7d} {c[SURVIVED]:9d} {c[NO_TESTS]:9d} {c[TIMEOUT]:8d} "
              f"{(c[KILLED] + c[TIMEOUT]) / judged if judged else 1:7.1%}")
    survivors = sorted(n for n, s in outcome.items() if s in (SURVIVED, NO_TESTS))
    eq = [n for n in survivors if n in equivalent]
    stale = sorted(set(equivalent) - set(survivors))
    judged = total[KILLED] + total[SURVIVED] + total[TIMEOUT] + total[NO_TESTS]
    caught = total[KILLED] + total[TIMEOUT]
    print(f"{'all':36s} {total[KILLED]:7d} {total[SURVIVED]:9d} {total[NO_TESTS]:9d} {total[TIMEOUT]:8d} "
          f"{caught / judged:7.1%}")
    print(f"\nscore: {caught} of {judged} killed ({caught / judged:.1%}); {len(eq)} listed as equivalent: "
          f"{caught} of {judged - len(eq)} non-equivalent killed ({caught / max(judged - len(eq), 1):.1%})")
    if args.json:
        args.json.write_text(json.dumps(outcome, indent=1, sort_keys=True))
    unexplained = [n for n in survivors if n not in equivalent]
    print(f"\n{len(unexplained)} surviving mutants not listed as equivalent:")
    diffs = mutant_diffs(root, unexplained)
    for n in unexplained:
        print(f"  {n} [{outcome[n]}]: {diffs[n][:220]}")
    if stale:
        print(f"\nlisted as equivalent but killed or gone (remove from {EQUIVALENT.name}): {', '.join(stale)}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
