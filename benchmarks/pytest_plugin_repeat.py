"""The pytest plugin run N times on one machine: does an unchanged function ever fail, does a
slowed one always fail?  (The issue's "no flakes over 20 runs".)

    python benchmarks/pytest_plugin_repeat.py [N [SCENARIO]]   (default 20 runs, every scenario;
                                                                SCENARIO: a part of its name)

Writes a small test file (a torch row softmax, the real kind of kernel, not a sleep) into a
temporary git repository (its commit is the unchanged code), saves one run, then runs pytest N
times with --perfbench-fail-on=regression: A/A paired, against the saved run, against the
committed revision (--perfbench-against=HEAD, a second process), each unchanged and with the
function slowed by ~30% in the working tree.  Prints one row per scenario: runs, failed,
speedups seen (min / median / max).
"""
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = '''
import torch

torch.set_num_threads(1)
SLOW = {slow}

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


def write(d: Path, slow: int) -> None:
    (d / "test_k.py").write_text(TESTS.replace("{slow}", str(slow)))


def run(d: Path, *args: str) -> tuple[int, dict]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(d.parent / "frozen")}   # this run's perfbench, not later edits
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--perfbench-json=r.json", *args],
                         cwd=d, capture_output=True, text=True, env=env)
    doc = json.loads((d / "r.json").read_text()) if (d / "r.json").exists() else {"benchmarks": []}
    for b in doc["benchmarks"]:   # against a revision: each process pair's own speedup, on stderr
        pb = b["extra_info"]["perfbench"]
        if pb.get("processes"):
            per = {p: statistics.median(x / y for x, y, q in zip(pb["baseline_samples_ns"], pb["samples_ns"],
                                                                 pb["processes"]) if q == p)
                   for p in sorted(set(pb["processes"]))}
            print(f"rc {out.returncode} speedup {pb['comparison']['speedup']:.3f} CI {pb['comparison']['ci']} "
                  f"per process {[round(v, 3) for v in per.values()]}", file=sys.stderr, flush=True)
    return out.returncode, {b["name"]: b["extra_info"]["perfbench"].get("comparison", {}).get("speedup")
                            for b in doc["benchmarks"]}


def main(n: int, only: str) -> None:
    import perfbench
    with tempfile.TemporaryDirectory() as top:
        shutil.copytree(Path(perfbench.__file__).parent, Path(top) / "frozen" / "perfbench",
                        ignore=shutil.ignore_patterns("__pycache__"))
        tmp = str(Path(top) / "repo")
        d = Path(tmp)
        d.mkdir()
        write(d, 0)
        git = ["git", "-C", tmp, "-c", "user.name=b", "-c", "user.email=b@example.com"]
        for cmd in (["init", "-q"], ["add", "test_k.py"], ["commit", "-q", "-m", "unchanged"]):
            subprocess.run(git + cmd, check=True)
        rc, _ = run(d, "--perfbench-save=base")
        assert rc == 0, "saving the base run failed"
        print(f"{'scenario':34s} {'runs':>4s} {'failed':>6s} {'s min':>7s} {'s med':>7s} {'s max':>7s}")
        for label, args, slow, test in [("A/A paired (unchanged)", (), 0, "test_paired"),
                                        ("vs saved run (unchanged)", ("--perfbench-compare=base",), 0, "test_single"),
                                        ("vs HEAD, live (unchanged)", ("--perfbench-against=HEAD",), 0, "test_single"),
                                        ("paired, candidate ~30% slower", (), 1, "test_paired"),
                                        ("vs saved run, ~30% slower", ("--perfbench-compare=base",), 1, "test_single"),
                                        ("vs HEAD, live, ~30% slower", ("--perfbench-against=HEAD",), 1, "test_single")]:
            if only not in label:
                continue
            write(d, slow)
            failed, speedups = 0, []
            for _ in range(n):
                (d / "r.json").unlink(missing_ok=True)
                rc, s = run(d, "--perfbench-fail-on=regression", "-k", test, *args)
                failed += rc != 0
                if s.get(test) is not None:
                    speedups.append(s[test])
            s = sorted(speedups) or [float("nan")]
            print(f"{label:34s} {n:4d} {failed:6d} {s[0]:7.3f} {statistics.median(s):7.3f} {s[-1]:7.3f}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20, sys.argv[2] if len(sys.argv) > 2 else "")
