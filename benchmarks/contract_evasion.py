"""#58 (6): how often a candidate that is robust only while gated escapes the contract blocks.

Scores CANDIDATE on TASK `--runs` times through a checkout's CLI (the defaults but `--s-ref`),
each with a fresh secret seed, and prints per score the verdict, the reason, the contract blocks
the candidate ran and the speedup; then how many were rejected, and the median wall.

    python benchmarks/contract_evasion.py [--checkout DIR] [--runs 10] [--task tasks/row_softmax]
        [--candidate tests/adversarial/candidates/softmax_contract_after_gate.py]
"""
import argparse
import statistics
import sys
from pathlib import Path

import score_wall   # (this script's directory is on sys.path)

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", type=Path, default=REPO)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--task", default="tasks/row_softmax")
    ap.add_argument("--candidate", default="tests/adversarial/candidates/softmax_contract_after_gate.py")
    ap.add_argument("--s-ref", default="table")
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    task, cand = (args.checkout / args.task).resolve(), (args.checkout / args.candidate).resolve()
    rows = []
    for i in range(args.runs):
        r = score_wall.one_score(task, cand, ("--quiet", "--s-ref", args.s_ref), args.python, args.checkout)
        v = r["verdict"]
        reasons = v.get("reasons") or []
        contract = v.get("contract") or {}
        rows.append((v.get("verdict"), reasons[0]["code"] if reasons else "", contract.get("blocks"), r["speedup"],
                     r["wall_s"]))
        verdict, code, blocks, s, wall = rows[-1]
        message = reasons[0]["message"][:90] if reasons else ""
        print(f"{i + 1:3d} {verdict or 'exit ' + str(r['exit']):9s} {code:22s} blocks={blocks} "
              f"s={s if s is None else round(s, 3)} wall={wall:5.1f}s {message}", flush=True)
    rejected = sum(1 for row in rows if row[0] == "rejected")
    print(f"\n{args.checkout.name}: {rejected}/{len(rows)} rejected; median wall {statistics.median(r[4] for r in rows):.1f} s")


if __name__ == "__main__":
    main()
