"""What `heap.keep_freed_memory` saves the scorer per timed block (perfbench/system/heap.py).

Times, in one fresh process per mode, the scorer's own work on a row_softmax-sized block: the
task's input maker (4M-element `torch.randn`), a float64 upcast and the float64 softmax oracle,
with glibc's default thresholds and with freed memory kept.  Prints ms per operation and the
ratio default / kept, measured in this run.

    python benchmarks/scorer_heap.py [--reps 20]
"""
import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, sys, time
import torch
from perfbench.system import heap
if sys.argv[1] == "kept":
    assert heap.keep_freed_memory()
torch.set_num_threads(1)
gen = torch.Generator().manual_seed(0)
x = torch.randn(4096, 1024)
ops = {"inputs (4 * randn)": lambda: 4.0 * torch.randn(4096, 1024, generator=gen),
       "float64 upcast": lambda: x.double(),
       "float64 oracle (softmax)": lambda: torch.softmax(x.double(), -1)}
out = {}
for name, op in ops.items():
    op()
    t0 = time.perf_counter()
    for _ in range(int(sys.argv[2])):
        op()
    out[name] = (time.perf_counter() - t0) / int(sys.argv[2]) * 1e3
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    runs = {mode: json.loads(subprocess.run([sys.executable, "-c", CHILD, mode, str(args.reps)], check=True,
                                            capture_output=True, text=True).stdout) for mode in ("default", "kept")}
    print(f"{'operation':28s} {'default':>9s} {'kept':>9s} {'ratio':>6s}")
    for name, ms in runs["default"].items():
        print(f"{name:28s} {ms:7.1f}ms {runs['kept'][name]:7.1f}ms {ms / runs['kept'][name]:5.2f}x")


if __name__ == "__main__":
    main()
