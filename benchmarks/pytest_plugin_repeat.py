"""The pytest plugin run N times on one machine: does an unchanged function ever fail, does a
slowed one always fail?  (The issue's "no flakes over 20 runs".)

    python benchmarks/pytest_plugin_repeat.py [N]      (default 20)

Writes a small test file (a torch row softmax, the real kind of kernel, not a sleep) into a
temporary directory, saves one run, then runs pytest N times with --perfbench-fail-on=regression:
A/A paired, against the saved run, and with the candidate slowed by ~25%.  Prints one row per
scenario: runs, failed, speedups seen (min / median / max).
"""
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = '''
import os
import torch

torch.set_num_threads(1)
SLOW = float(os.environ.get("PB_SLOW", "0"))

def reference(x):
    return torch.softmax(x, dim=-1)

def mine(x):
    out = torch.softmax(x, dim=-1)
    if SLOW:   # extra work proportional to the kernel's: a real ~25% slowdown
        for _ in range(int(SLOW)):
            torch.softmax(x[: x.shape[0] // 4], dim=-1)
    return out

def make(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(128, 512, generator=g),)

def test_paired(perfbench):
    perfbench.compare(reference, mine, make)

def test_single(perfbench):
    perfbench(mine, make)
'''


def run(d: Path, *args: str, slow: int = 0) -> tuple[int, dict]:
    env = {"PB_SLOW": str(slow), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--perfbench-json=r.json", *args],
                         cwd=d, capture_output=True, text=True, env=env)
    doc = json.loads((d / "r.json").read_text()) if (d / "r.json").exists() else {"benchmarks": []}
    return out.returncode, {b["name"]: b["extra_info"]["perfbench"].get("comparison", {}).get("speedup")
                            for b in doc["benchmarks"]}


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "test_k.py").write_text(TESTS)
        rc, _ = run(d, "--perfbench-save=base")
        assert rc == 0, "saving the base run failed"
        print(f"{'scenario':34s} {'runs':>4s} {'failed':>6s} {'s min':>7s} {'s med':>7s} {'s max':>7s}")
        for label, args, slow, test in [("A/A paired (unchanged)", (), 0, "test_paired"),
                                        ("vs saved run (unchanged)", ("--perfbench-compare=base",), 0, "test_single"),
                                        ("paired, candidate ~25% slower", (), 1, "test_paired"),
                                        ("vs saved run, ~25% slower", ("--perfbench-compare=base",), 1, "test_single")]:
            failed, speedups = 0, []
            for _ in range(n):
                (d / "r.json").unlink(missing_ok=True)
                rc, s = run(d, "--perfbench-fail-on=regression", "-k", test, *args, slow=slow)
                failed += rc != 0
                if s.get(test) is not None:
                    speedups.append(s[test])
            s = sorted(speedups) or [float("nan")]
            print(f"{label:34s} {n:4d} {failed:6d} {s[0]:7.3f} {statistics.median(s):7.3f} {s[-1]:7.3f}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
