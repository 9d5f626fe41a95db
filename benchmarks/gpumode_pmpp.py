"""#41's table: every solution a GPU MODE `problems/pmpp*/<name>_py` directory ships, scored on
the CPU (`--device cpu`) as a user would: `perfbench score PROBLEM SOLUTION`.  A correct one
should score (exit 0), a wrong one be rejected (exit 1) naming why.  Benchmark sizes are cut to
the CPU (`--set benchmarks=...`: the smallest two of each problem; conv2d's smallest one).

    python benchmarks/gpumode_pmpp.py REFERENCE_KERNELS_CHECKOUT [--set-dir problems/pmpp_v2] [--out DIR]

The checkout is never committed (fetch github:gpu-mode/reference-kernels; mind its licence).
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Benchmarks kept per problem (indices into task.yml's benchmarks:): each call under ~0.2 s here.
KEEP = {"conv2d_py": "0", "grayscale_py": "0,1", "histogram_py": "0,1", "matmul_py": "0,1", "prefixsum_py": "0,1",
        "sort_py": "0,1", "vectoradd_py": "0,1", "vectorsum_py": "0,1"}
QUICK = ["--device", "cpu", "--processes", "1", "--pairs", "6", "--max-pairs", "10", "--quiet"]


def one(problem: Path, solution: Path, python: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "v.json"
        t0 = time.perf_counter()
        proc = subprocess.run([python, "-m", "perfbench.cli.main", "score", str(problem), str(solution), *QUICK,
                               "--set", f"benchmarks={KEEP.get(problem.name, '0')}", "--out", str(out)],
                              capture_output=True, text=True)
        doc = json.loads(out.read_text()) if out.exists() else {}
    reasons = "; ".join(f"{r['code']}: {r['message']}" for r in doc.get("reasons", []))
    error = proc.stderr.strip().splitlines()[-1] if proc.returncode == 2 and proc.stderr.strip() else ""
    return {"exit": proc.returncode, "speedup": doc.get("speedup"), "ci": doc.get("ci"),
            "per_benchmark": [round(b["speedup"], 3) for b in doc.get("benchmarks", [])],
            "why": (reasons or error)[:160], "wall_s": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--set-dir", default="problems/pmpp_v2")
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    rows = []
    print("| problem | solution | exit | geomean speedup (each benchmark) | why rejected | wall |\n|---|---|---|---|---|---|")
    for problem in sorted((args.checkout / args.set_dir).glob("*_py")):
        for expect in ("correct", "wrong"):
            for solution in sorted((problem / "solutions" / expect).glob("*.py")):
                r = one(problem, solution, args.python)
                rows.append((problem.name, f"{expect}/{solution.name}", r))
                s = (f"{r['speedup']:.3f} (each: {', '.join(map(str, r['per_benchmark']))})"
                     if r["speedup"] is not None else "-")
                print(f"| {problem.name} | {expect}/{solution.name} | {r['exit']} | {s} | {r['why']} | "
                      f"{r['wall_s']:.0f} s |", flush=True)
    ok = sum(1 for _, name, r in rows if r["exit"] == (0 if name.startswith("correct") else 1))
    print(f"\n{ok}/{len(rows)} as expected (correct: exit 0, wrong: exit 1)")


if __name__ == "__main__":
    main()
