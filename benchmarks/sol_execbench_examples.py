"""#62's must-show: every example of a SOL-ExecBench checkout, scored on this machine's CPU.

For each examples/<language>/<problem>:
- its own solution (`perfbench score --device cpu`, const axes shrunk and workloads chosen by
  SETTINGS so that a CPU finishes): exit code, the geometric-mean speedup and its CI;
- a wrong solution made from it (its entry point's outputs times 1.25: written into the
  destination-passing outputs, or returned): exit code and reason;
- a destination-passing solution that leaves its outputs untouched: exit code and reason.
Compiled languages are expected to be refused (`candidate.unsupported`, exit 2).

    python benchmarks/sol_execbench_examples.py PATH/TO/SOL-ExecBench/examples [--only triton/rmsnorm]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

# CPU-sized runs: workloads kept and const axes shrunk (the verdict warns of each shrink).
SETTINGS = {
    "pytorch/gemma3_swiglu": ["--set", "hidden_size=256", "--set", "intermediate_size=1024"],
    "pytorch/linear_backward": [],
    "triton/rmsnorm": ["--set", "workloads=1,0"],
    "triton/olmo3_post_norm": ["--set", "workloads=0"],
    "triton/nemotron_rms_norm": ["--set", "workloads=0"],
}

WRAP = '''

_perfbench_original = {fn}


def {fn}(*args):
    out = _perfbench_original(*args)
    if {dps}:
        args[-1].mul_(1.25)
        return out
    if isinstance(out, tuple):
        return (out[0] * 1.25,) + tuple(out[1:])
    return out * 1.25
'''


def variants(solution: Path, into: Path) -> dict[str, Path]:
    doc = json.loads(solution.read_text())
    spec = doc["spec"]
    file, _, fn = spec["entry_point"].rpartition("::")
    wrong = json.loads(json.dumps(doc))
    for src in wrong["sources"]:
        if src["path"] == file:
            src["content"] += WRAP.format(fn=fn, dps=bool(spec.get("destination_passing_style")))
    untouched = {"name": "untouched", "definition": doc.get("definition", ""), "author": "perfbench",
                 "spec": {"languages": ["pytorch"], "entry_point": "kernel.py::run", "destination_passing_style": True},
                 "sources": [{"path": "kernel.py", "content": "def run(*args):\n    pass\n"}]}
    out = {}
    for name, d in (("wrong", wrong), ("untouched", untouched)):
        out[name] = into / f"{name}.json"
        out[name].write_text(json.dumps(d))
    return out


def score(problem: Path, solution: Path, extra: list[str]) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "perfbench.cli.main", "score", str(problem), str(solution),
                           "--device", "cpu", "--json", "--quiet", *extra], capture_output=True, text=True)
    if proc.returncode == 2:
        line = proc.stderr.strip().splitlines()[-1].removeprefix("perfbench: error: ")
        return 2, line.replace(f"{solution}: ", "")[:110]
    doc = json.loads(proc.stdout)
    if doc["verdict"] == "rejected":
        return proc.returncode, f"{doc['reasons'][0]['code']}: {doc['reasons'][0]['message'][:90]}"
    per = ", ".join(f"{b['speedup']:.3f} [{b['ci'][0]:.3f}, {b['ci'][1]:.3f}]" for b in doc["benchmarks"])
    return proc.returncode, f"{doc['speedup']:.3f}x CI [{doc['ci'][0]:.3f}, {doc['ci'][1]:.3f}] (workloads: {per})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("examples", type=Path)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    rows = []
    for problem in sorted(p.parent for p in args.examples.glob("*/*/definition.json")):
        name = f"{problem.parent.name}/{problem.name}"
        if args.only and name != args.only:
            continue
        solution = next(problem.glob("solution*.json"))
        with tempfile.TemporaryDirectory() as tmp:
            runs = [("own", solution)]
            if name in SETTINGS:
                runs += list(variants(solution, Path(tmp)).items())
            for label, path in runs:
                rc, what = score(problem, path, SETTINGS.get(name, []))
                rows.append((name, label, rc, what))
                print(f"{name:26} {label:9} exit {rc}  {what}", flush=True)
    print("\n| example | solution | exit | verdict |\n|---|---|---|---|")
    for name, label, rc, what in rows:
        print(f"| {name} | {label} | {rc} | {what} |")


if __name__ == "__main__":
    main()
