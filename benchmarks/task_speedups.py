"""Quick look at every CPU task: baseline vs solution vs starter on the timed size.

Not a test and not the scorer: a plain interleaved loop (each round times one call of
each implementation, in rotating order) and the median over rounds, each task in a
fresh interpreter; then every implementation is checked against the float64
reference on every size. Use it to sanity-check a task's s_ref before calibrating
it properly; on a shared machine, run it when nothing else is busy.

    .venv/bin/python benchmarks/task_speedups.py [--rounds 20] [--seed 0] [task ...]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
TASKS = REPO / "tasks"
ROLES = ("inputs", "reference", "baseline", "solution", "starter")


def load_module(task: str, role: str):
    path = TASKS / task / f"{role}.py"
    name = f"perfbench_bench_task_{task}_{role}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def upcast(args: tuple) -> tuple:
    return tuple(a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args)


def matches(out, like: torch.Tensor, precise: torch.Tensor, rtol: float, atol: float) -> bool:
    return (
        isinstance(out, torch.Tensor)
        and out.shape == like.shape
        and out.dtype == like.dtype
        and torch.allclose(out.double(), precise, rtol=rtol, atol=atol)
    )


def check(task: str, cfg: dict, mods: dict, seed: int) -> bool:
    """Every implementation vs the float64 reference, on every size."""
    tol = cfg.get("tolerance", {})
    rtol, atol = tol.get("rtol", 1e-4), tol.get("atol", 1e-5)
    ok = True
    for size in cfg["inputs"]["sizes"]:
        args = mods["inputs"].make_inputs(seed, size)
        like = mods["reference"].reference(*args)  # the expected shape and dtype
        precise = mods["reference"].reference(*upcast(args))  # the float64 oracle
        for role in ("baseline", "solution", "starter"):
            out = getattr(mods[role], cfg["entry_point"])(*args)
            if not matches(out, like, precise, rtol, atol):
                print(f"  {task}/{role} WRONG on size {size!r}", file=sys.stderr)
                ok = False
    return ok


def time_interleaved(fns: dict, args: tuple, rounds: int) -> dict:
    for fn in fns.values():  # warm-up (and first-call compiles / extension loads)
        fn(*args)
    samples = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            t0 = time.perf_counter_ns()
            fns[name](*args)
            samples[name].append(time.perf_counter_ns() - t0)
    return {name: statistics.median(s) / 1e6 for name, s in samples.items()}


def run_task(task: str, rounds: int, seed: int) -> tuple:
    """Time first (so the correctness pass cannot disturb the allocator), then check."""
    cfg = tomllib.loads((TASKS / task / "task.toml").read_text())
    mods = {role: load_module(task, role) for role in ROLES}
    args = mods["inputs"].make_inputs(seed, cfg["inputs"]["timed_size"])
    fns = {role: getattr(mods[role], cfg["entry_point"]) for role in ("baseline", "solution", "starter")}
    ms = time_interleaved(fns, args, rounds)
    ok = check(task, cfg, mods, seed)
    return (task, ms["baseline"], ms["solution"], ms["baseline"] / ms["solution"],
            ms["starter"] / ms["baseline"], cfg["timing"]["s_ref"], "yes" if ok else "NO")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task folder names (default: every CPU perf task)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()

    if opts.child:  # one task, in a fresh process, result as one JSON line
        print(json.dumps(run_task(opts.tasks[0], opts.rounds, opts.seed)))
        return 0

    names = opts.tasks or sorted(p.parent.name for p in TASKS.glob("*/task.toml"))
    docs = {t: tomllib.loads((TASKS / t / "task.toml").read_text()) for t in names}
    names = [t for t in names if docs[t]["device"] == "cpu" and docs[t]["kind"] == "perf"]
    rows = []
    for task in names:
        # A fresh interpreter per task: large temporaries make timings depend on malloc's
        # state, which earlier tasks in the same process would otherwise leave behind.
        child = subprocess.run(
            [sys.executable, __file__, "--child", "--rounds", str(opts.rounds), "--seed", str(opts.seed), task],
            capture_output=True, text=True,
        )
        if child.returncode != 0:
            sys.stderr.write(child.stdout + child.stderr)
            rows.append((task, float("nan"), float("nan"), float("nan"), float("nan"), float("nan"), "ERROR"))
            continue
        sys.stderr.write(child.stderr)
        rows.append(tuple(json.loads(child.stdout.strip().splitlines()[-1])))

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {opts.rounds} rounds, median")
    header = ("task", "baseline ms", "solution ms", "speedup", "starter/base", "s_ref", "correct")
    print("{:<14} {:>12} {:>12} {:>8} {:>13} {:>6} {:>8}".format(*header))
    for row in rows:
        print("{:<14} {:>12.3f} {:>12.3f} {:>7.2f}x {:>13.2f} {:>6.2f} {:>8}".format(*row))
    return 0 if all(row[-1] == "yes" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
