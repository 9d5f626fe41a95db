"""The worker-protocol fuzz through the CLI (#39's verdict contract): N copies of
tests/adversarial/candidates/hostile_replies.py, seeds 0..N-1, each scored by `perfbench score`
on tests/fixtures/tiny_task.  Every run must exit 0 or 1 with a JSON verdict on stdout: no
traceback, no death by a signal, no hang past the timeout.

    .venv/bin/python scripts/protocol_fuzz.py [N] [--timeout S]

Prints one row per seed (kind, exit, verdict, reason codes, seconds) and the totals; exit status
1 if any run broke the contract."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "tests" / "adversarial" / "candidates" / "hostile_replies.py"
TASK = REPO / "tests" / "fixtures" / "tiny_task"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=40)
    ap.add_argument("--timeout", type=float, default=20.0, help="--timeout of each score (s)")
    args = ap.parse_args()
    broken, verdicts, codes = 0, Counter(), Counter()
    with tempfile.TemporaryDirectory(prefix="perfbench-fuzz-") as tmp:
        for seed in range(args.n):
            cand = Path(tmp) / f"hostile_{seed}.py"
            text = TEMPLATE.read_text().replace("\nSEED = 0\n", f"\nSEED = {seed}\n", 1)
            cand.write_text(text)
            t0 = time.monotonic()
            try:
                # (`-m` from the repository: this checkout's perfbench, whatever the venv installed)
                proc = subprocess.run([sys.executable, "-m", "perfbench.cli.main", "score", str(TASK), str(cand), "--json",
                                       "--quiet", "--pairs", "6", "--max-pairs", "6", "--processes", "1",
                                       "--timeout", str(args.timeout)],
                                      capture_output=True, text=True, timeout=4 * args.timeout + 60, cwd=REPO)
                rc, out, err = proc.returncode, proc.stdout, proc.stderr
            except subprocess.TimeoutExpired:
                rc, out, err = "hang", "", ""
            wall = time.monotonic() - t0
            try:
                verdict = json.loads(out)
                summary = verdict["verdict"], ",".join(r["code"] for r in verdict.get("reasons", []))
            except (ValueError, KeyError, TypeError):
                verdict, summary = {}, ("NO JSON", "")
            ok = rc in (0, 1) and summary[0] != "NO JSON" and "Traceback" not in err
            broken += not ok
            verdicts[summary[0]] += 1
            codes[summary[1] or "-"] += 1
            kind = _kind(verdict)
            print(f"seed {seed:3d}  {kind:10s}  exit {rc!s:4s}  {summary[0]:8s}  {summary[1] or '-':28s} "
                  f"{wall:5.1f}s{'' if ok else '  BROKEN: ' + err.strip().splitlines()[-1][:120] if err.strip() else ''}",
                  flush=True)
    print(f"\n{args.n} runs: {broken} broke the contract; verdicts {dict(verdicts)}; codes {dict(codes)}")
    return 1 if broken else 0


def _kind(verdict: dict) -> str:
    """The hostile kind the candidate drew, as it logged it at load ("fuzz: seed N, KIND at ...")."""
    for line in ((verdict.get("worker_logs") or {}).get("candidate") or "").splitlines():
        if line.startswith("fuzz: seed "):
            return line.split()[3].rstrip(",")
    return "?"   # (rejected before it loaded)


if __name__ == "__main__":
    sys.exit(main())
