"""Error rates of decision-aware stopping (core/stopping.py), on seeded FakeTimer scores.

    python benchmarks/stopping_coverage.py [--runs 200] [--s-ref 4] [--out FILE.json]
    python benchmarks/stopping_coverage.py --ci-target 0.03 [--processes 10] [--call-noise 0.03]

For each true speedup (around s_ref and s_ref**2, where a sequential rule errs most) and each
between-process spread, N simulated 3-process scores with the rule and N with fixed length
(same seeds): the share of runs whose reported CI covers the truth, how many stopped early and
the pairs they measured.  Coverage should be >= the nominal 95% (binomial error ~1.5% at 200).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from perfbench.core.stopping import StoppingRule
from perfbench.timing.sampler import SamplerConfig
from perfbench.testing.simulate import SimulatedHost, simulated_score

SAMPLER = SamplerConfig(min_pairs=10, max_pairs=60, warmup_s=0.0, min_block_s=0.0, n_resamples=500,
                        time_budget_s=1e9)


def study(truth: float, s_ref: float, sigma: float, runs: int, early: bool) -> dict:
    # min_processes=2: the earliest stop a score may be given (the default, 3, makes a 3-process
    # score measure every process); one look at 3 processes is the same test as at 4 with 3.
    rule = StoppingRule(3, s_ref, min_processes=2) if early else StoppingRule(3, None, target_rel_ci=0.0)
    done = [simulated_score(truth, rule, SAMPLER, SimulatedHost(process_sigma=sigma), seed=10_000 + i)
            for i in range(runs)]
    return {"coverage": sum(r.covers(truth) for r in done) / runs,
            "stopped_early": sum(1 for r in done if r.decision) / runs,
            "mean_pairs": sum(r.samples.n_pairs for r in done) / runs}


def width_study(truth: float, host: SimulatedHost, runs: int, processes: int, target: float | None) -> dict:
    """`--ci-target`: up to `processes` processes, stopping once the look's CI is `target` wide."""
    rule = StoppingRule(processes, None, target_r_ci=None, target_rel_ci=target)
    done = [simulated_score(truth, rule, SAMPLER, host, seed=20_000 + i) for i in range(runs)]
    widths = sorted(r.summary.speedup.rel_half_width for r in done)
    return {"coverage": sum(r.covers(truth) for r in done) / runs,
            "stopped_early": sum(1 for r in done if r.decision) / runs,
            "mean_processes": sum(r.samples.processes[-1] + 1 for r in done) / runs,
            "median_half_width": widths[len(widths) // 2], "max_half_width": widths[-1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--s-ref", type=float, default=4.0)
    ap.add_argument("--ci-target", type=float, default=None,
                    help="study stopping on the CI's width instead: up to --processes processes")
    ap.add_argument("--processes", type=int, default=10)
    ap.add_argument("--call-noise", type=float, default=0.03)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    rows = []
    if a.ci_target is not None:
        for sigma in (0.0, 0.03):
            host = SimulatedHost(call_noise=a.call_noise, process_sigma=sigma)
            row = {"truth": 3.0, "process_sigma": sigma, "call_noise": a.call_noise,
                   "early": width_study(3.0, host, a.runs, a.processes, a.ci_target),
                   "fixed": width_study(3.0, host, a.runs, a.processes, None)}
            rows.append(row)
            e, f = row["early"], row["fixed"]
            print(f"sigma={sigma:<5g} coverage early {e['coverage']:.3f} fixed {f['coverage']:.3f}  stopped early "
                  f"{100 * e['stopped_early']:.0f}%  processes {e['mean_processes']:.1f} vs {f['mean_processes']:.1f}  "
                  f"half-width median {100 * e['median_half_width']:.1f}% vs {100 * f['median_half_width']:.1f}%, "
                  f"max {100 * e['max_half_width']:.1f}% vs {100 * f['max_half_width']:.1f}%", flush=True)
        if a.out:
            a.out.write_text(json.dumps({"ci_target": a.ci_target, "runs": a.runs, "rows": rows}, indent=2))
        return
    for sigma in (0.02, 0.05):
        for truth in (1.0, a.s_ref, 1.3 * a.s_ref, a.s_ref ** 2, 2 * a.s_ref ** 2):
            row = {"truth": truth, "process_sigma": sigma,
                   "early": study(truth, a.s_ref, sigma, a.runs, True),
                   "fixed": study(truth, a.s_ref, sigma, a.runs, False)}
            rows.append(row)
            e, f = row["early"], row["fixed"]
            print(f"s={truth:<6g} sigma={sigma:<5g} coverage early {e['coverage']:.3f} fixed {f['coverage']:.3f}  "
                  f"stopped early {100 * e['stopped_early']:.0f}%  pairs {e['mean_pairs']:.1f} vs {f['mean_pairs']:.1f}",
                  flush=True)
    if a.out:
        a.out.write_text(json.dumps({"s_ref": a.s_ref, "runs": a.runs, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
