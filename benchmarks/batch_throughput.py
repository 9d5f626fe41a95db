"""#15's batch figure: a batch of N candidates killed half-way and resumed, on the local pool and
on a local Ray instance, against sequential `perfbench score` of the same kind of rows.

For each backend: writes N candidate files (copies of tiny_task's honest_fast, honest_slow,
raises and wrong_values, in turn) and a JSONL manifest; starts `perfbench score-batch` in its own
session; SIGKILLs that whole session once half the rows are in the results file; runs the same
command again; then checks that every manifest id is in the file exactly once, and that each
row's outcome is the one its candidate should get.  Sequential: `perfbench score` of the first
`--sequential` rows, one CLI process each, with the same options.  Prints rows/minute for each
(the batch's over both runs' wall time, start-ups and the kill included).

    python benchmarks/batch_throughput.py [--rows 200] [--sequential 8] [--backends local,ray]
        [--out-dir /tmp/perfbench-batch-throughput]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures"
TASK = FIX / "tiny_task"
# candidate -> the outcome and reasons its row must get
KINDS = {"honest_fast.py": ("scored", []), "honest_slow.py": ("scored", []),
         "raises.py": ("rejected", ["candidate.raised"]), "wrong_values.py": ("rejected", ["correctness.mismatch"])}
OPTIONS = ("--processes", "2", "--pairs", "6", "--max-pairs", "6")


def make_rows(root: Path, n: int) -> tuple[Path, dict[str, str]]:
    """N candidate files and their manifest; returns the manifest and id -> kind."""
    cands = root / "candidates"
    cands.mkdir(parents=True)
    kinds = list(KINDS)
    rows, kind_of = [], {}
    for i in range(n):
        kind = kinds[i % len(kinds)]
        name = f"c{i:03d}_{kind}"
        shutil.copy(FIX / "candidates" / kind, cands / name)
        rows.append({"task": str(TASK), "candidate": f"candidates/{name}", "id": name})
        kind_of[name] = kind
    manifest = root / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return manifest, kind_of


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def run_batch(manifest: Path, out: Path, backend: str, kill_at: int | None) -> tuple[float, bool]:
    """One `score-batch` run: (wall seconds, whether it was killed)."""
    cmd = [sys.executable, "-m", "perfbench.cli.main", "score-batch", str(manifest), "--out", str(out),
           "--backend", backend, "--quiet", *OPTIONS]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    while proc.poll() is None:
        if kill_at is not None and len(lines(out)) >= kill_at:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return time.perf_counter() - t0, True
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"score-batch exited {proc.returncode}: {proc.stderr.read()[-2000:]}")
    return wall, False


def check(out: Path, kind_of: dict[str, str]) -> str:
    """Every row once, each with its kind's outcome; raises SystemExit otherwise."""
    records = [json.loads(x) for x in lines(out)]
    counts = Counter(r["id"] for r in records)
    missing = sorted(set(kind_of) - set(counts))
    twice = sorted(i for i, c in counts.items() if c > 1)
    wrong = [r["id"] for r in records if (r["outcome"], r["reasons"]) != KINDS[kind_of[r["id"]]]]
    if missing or twice or wrong:
        raise SystemExit(f"{out}: {len(missing)} rows missing {missing[:5]}, {len(twice)} twice {twice[:5]}, "
                         f"{len(wrong)} with the wrong outcome {wrong[:5]}")
    return ", ".join(f"{n} {k}" for k, n in sorted(Counter(r["outcome"] for r in records).items()))


def sequential(root: Path, kind_of: dict[str, str], n: int) -> float:
    """rows/minute of `perfbench score`, one CLI process per row."""
    t0 = time.perf_counter()
    for name in list(kind_of)[:n]:
        proc = subprocess.run([sys.executable, "-m", "perfbench.cli.main", "score", str(TASK),
                               str(root / "candidates" / name), "--quiet", *OPTIONS], cwd=REPO,
                              capture_output=True, text=True)
        expected = 0 if KINDS[kind_of[name]][0] == "scored" else 1
        if proc.returncode != expected:
            raise SystemExit(f"perfbench score {name} exited {proc.returncode}: {proc.stderr[-1000:]}")
    return n / (time.perf_counter() - t0) * 60


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--sequential", type=int, default=8)
    ap.add_argument("--backends", default="local,ray")
    ap.add_argument("--out-dir", type=Path, default=Path("/tmp/perfbench-batch-throughput"))
    args = ap.parse_args()
    shutil.rmtree(args.out_dir, ignore_errors=True)
    table = []
    for backend in [b for b in args.backends.split(",") if b]:
        root = args.out_dir / backend
        manifest, kind_of = make_rows(root, args.rows)
        out = root / "results.jsonl"
        first, killed = run_batch(manifest, out, backend, kill_at=args.rows // 2)
        at_kill = len(lines(out))
        second, _ = run_batch(manifest, out, backend, kill_at=None)
        outcomes = check(out, kind_of)
        rate = args.rows / (first + second) * 60
        print(f"{backend}: killed={killed} with {at_kill} rows in, resumed; {args.rows} rows once each "
              f"({outcomes}); {first:.1f} + {second:.1f} s; {rate:.1f} rows/min", flush=True)
        table.append((backend, rate))
    if args.sequential:
        root = args.out_dir / "sequential"
        _, kind_of = make_rows(root, args.sequential)
        table.append(("sequential perfbench score", sequential(root, kind_of, args.sequential)))
    print("\nbackend                      rows/min")
    for name, rate in table:
        print(f"{name:28s} {rate:8.1f}")


if __name__ == "__main__":
    main()
