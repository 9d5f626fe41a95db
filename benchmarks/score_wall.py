"""Wall time of one `perfbench score`, phase by phase (#15: "one score of the row_softmax
solution: wall time before vs after, goal <= 15 s here").

Runs the CLI as a user would (a fresh interpreter per score) RUNS times and prints, per run,
when each phase began (from the progress lines on stderr), the total, and the verdict's speedup
and CI, so that a faster score can be checked to measure the same thing.  Run it on an idle
machine; compare two checkouts by running it in each.

    python benchmarks/score_wall.py [--runs 3] [--task tasks/row_softmax] [--candidate FILE] [--fresh-workers]
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PHASES = ("starting workers (the gate's)", "starting workers (1", "correctness gate", "timing AB-BA pairs", "starting workers (2",
          "starting workers (3", "stopping after")


def cli_module(checkout: Path | None) -> str:
    """How to run a checkout's CLI: `python -m perfbench` since #40 moved the CLI into cli/; an
    older checkout (a BEFORE of checkout_ab.py or schedule_cli_aa.py) has it in perfbench/cli.py."""
    root = Path(checkout) if checkout is not None else Path(__file__).resolve().parents[1]
    return "perfbench" if (root / "perfbench" / "__main__.py").exists() else "perfbench.cli"


def one_score(task: Path, candidate: Path, extra: tuple[str, ...] = (), python: str = sys.executable,
              cwd: Path | None = None) -> dict:
    """One CLI score by `python` (another checkout's venv: benchmarks/checkout_ab.py) in `cwd`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "verdict.json"
        t0 = time.perf_counter()
        proc = subprocess.Popen([python, "-m", cli_module(cwd), "score", str(task), str(candidate),
                                 "--out", str(out), *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                cwd=cwd)
        seen = {}
        for line in proc.stderr:
            for part in line.replace("\r", "\n").splitlines():
                for phase in PHASES:
                    if phase in part and phase not in seen:
                        seen[phase] = time.perf_counter() - t0
        proc.wait()
        wall = time.perf_counter() - t0
        verdict = json.loads(out.read_text()) if out.exists() else {}
    stopping = ((verdict.get("comparison") or {}).get("extra") or {}).get("stopping") or {}
    ci = verdict.get("ci") or (None, None)
    return {"wall_s": wall, "exit": proc.returncode, "phases": seen,
            "speedup": verdict.get("speedup"),
            "ci": tuple(round(x, 3) for x in ci if x is not None), "processes": stopping.get("processes_run"),
            "verdict": verdict}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--task", type=Path, default=REPO / "tasks" / "row_softmax")
    ap.add_argument("--candidate", type=Path, default=None, help="default: the task's solution.py")
    ap.add_argument("--fresh-workers", action="store_true",
                    help="every worker a new interpreter (the way scores ran before the zygote)")
    args = ap.parse_args()
    cand = args.candidate or args.task / "solution.py"
    runs = []
    for i in range(args.runs):
        r = one_score(args.task, cand, ("--fresh-workers",) if args.fresh_workers else ())
        runs.append(r)
        phases = "  ".join(f"{'gate-workers' if 'gate' in k and '(' in k else k.split(' (')[0].split()[0] + ('' if '(' not in k else k[-1])}@{v:.1f}"
                           for k, v in r["phases"].items())
        print(f"run {i + 1}: {r['wall_s']:.1f} s  exit {r['exit']}  s={r['speedup'] and round(r['speedup'], 3)}  CI={r['ci']}  "
              f"processes={r['processes']}  [{phases}]", flush=True)
    walls = sorted(r["wall_s"] for r in runs)
    print(f"\n{args.task.name}: median wall {walls[len(walls) // 2]:.1f} s over {len(runs)} scores "
          f"(min {walls[0]:.1f}, max {walls[-1]:.1f})")


if __name__ == "__main__":
    main()
