"""#61: the speed of light of honest candidates, and whether the physics gate flags any.

Scores each candidate once through the CLI (honest_ab.py's 20: every shipped CPU task's solution,
starter and baseline, the tiny task's honest fixtures; plus any `--extra TASK=CANDIDATE[=FLAGS]`,
e.g. a KernelBench file or a GPU MODE problem) and prints, per verdict's sol section: bytes,
flops (counted or declared), t_sol, the bound, the baseline's and the candidate's fraction of SOL,
the SOL score and the headroom; then how many were rejected tamper.impossible_speed (the physics
gate's false positives: honest candidates all) and the largest candidate fraction seen, which
is what the gate's factor must stay above.

    python benchmarks/sol_tasks.py [--only NAME ...] [--extra TASK=CANDIDATE[=FLAGS] ...]
"""
import argparse
import shlex
from pathlib import Path

import honest_ab    # (this script's directory is on sys.path)
import score_wall


def rows(doc: dict) -> list[tuple[str, dict]]:
    if doc.get("sol"):
        return [("", doc["sol"])]
    return [(f" {b['name']}", b["sol"]) for b in doc.get("benchmarks") or [] if b.get("sol")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="substrings of candidate names")
    ap.add_argument("--extra", action="append", default=[], metavar="TASK=CANDIDATE[=FLAGS]")
    a = ap.parse_args()
    chosen = [c for c in honest_ab.CANDIDATES if not a.only or any(o in c[0] for o in a.only)]
    for spec in a.extra:
        task, cand, *flags = spec.split("=", 2)
        chosen.append((f"{Path(task).name}/{Path(cand).name}", task, cand, tuple(shlex.split(flags[0])) if flags else ()))
    flagged, largest = [], 0.0
    print(f"{'candidate':34s} {'bytes':>11s} {'flops':>22s} {'t_sol':>10s} {'bound':7s} {'base':>6s} "
          f"{'cand [CI]':>20s} {'SOL':>5s} {'headroom':>8s}  verdict")
    for name, task, cand, extra in chosen:
        extra = extra if "--s-ref" in extra else (*extra, "--s-ref", "table")
        r = score_wall.one_score(Path(task), Path(cand), ("--quiet", *extra))
        doc = r["verdict"]
        codes = [x["code"] for x in doc.get("reasons", [])]
        if "tamper.impossible_speed" in codes:
            flagged.append(name)
        verdict = f"{doc.get('verdict')} {','.join(codes)}".strip()
        if not rows(doc):
            print(f"{name:34s} {'(no sol section)':>11s}  {verdict}", flush=True)
        for suffix, sol in rows(doc):
            w, c, b = sol["work"], sol["candidate"], sol["baseline"]
            flops = f"{w['flops']} {w.get('flops_source') or ''}" if w.get("flops") else f"none {w.get('flops_source') or ''}"
            largest = max(largest, c["fraction_of_sol"])
            print(f"{(name + suffix)[:34]:34s} {w['bytes']:>11d} {flops:>22s} {sol['t_sol_ns'] / 1e3:>8.1f}us "
                  f"{sol['bound']:7s} {100 * b['fraction_of_sol']:>5.1f}% {100 * c['fraction_of_sol']:>5.1f}% "
                  f"[{100 * c['fraction_ci'][0]:.1f}, {100 * c['fraction_ci'][1]:.1f}] {c['sol_score']:>5.3f} "
                  f"{sol['headroom']:>7.1f}x  {verdict}", flush=True)
    print(f"\n{len(chosen)} honest candidates: {len(flagged)} rejected tamper.impossible_speed {flagged}; "
          f"the largest candidate fraction of SOL {100 * largest:.1f}% (the gate rejects above 200%)")


if __name__ == "__main__":
    main()
