"""Turn results into text a person reads.  Computes nothing that is not already in the result."""
from __future__ import annotations

from statistics import median
from typing import TYPE_CHECKING

from ..core.results import ComparisonResult
from ..core.verdict import VERDICT_REJECTED, ScoreResult

if TYPE_CHECKING:   # (the validation pipeline imports torch; a report needs none)
    from ..pipeline.validate import ValidationReport

SIGNIFICANCE = 0.01


def format_time(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3f} {unit}"
    return f"{ns:.1f} ns"


def comparison_verdict(r: ComparisonResult) -> str:
    """One line in hyperfine's style: 'cand is 2.00 ± 0.03 times faster than base (p=...)'."""
    s = r.summary
    lo, hi = s.speedup.low, s.speedup.high
    if not s.significant(SIGNIFICANCE):
        return (f"no significant difference: speedup {s.speedup.value:.3f} "
                f"[{lo:.3f}, {hi:.3f}], p={s.p_value:.3g} >= {SIGNIFICANCE}")
    if s.speedup.value >= 1:
        ratio, plus_minus, word = s.speedup.value, (hi - lo) / 2, "faster"
    else:
        ratio, plus_minus, word = 1 / s.speedup.value, (1 / lo - 1 / hi) / 2, "slower"
    return f"{r.candidate} is {ratio:.2f} ± {plus_minus:.2f} times {word} than {r.baseline} (p={s.p_value:.2g})"


def comparison_table(r: ComparisonResult) -> str:
    s = r.summary
    smp = r.samples
    pct = int(round(s.speedup.confidence * 100))
    rows = [
        ("baseline", f"{r.baseline}", format_time(median(smp.baseline_ns))),
        ("candidate", f"{r.candidate}", format_time(median(smp.candidate_ns))),
    ]
    w = max(len(x[1]) for x in rows)
    lines = [f"{name:<10} {label:<{w}}  {t:>12} / call (median of pairs)" for name, label, t in rows]
    lines.append(f"{'speedup':<10} {s.speedup.value:.3f}x  {pct}% CI [{s.speedup.low:.3f}, {s.speedup.high:.3f}]"
                 f"  Hodges-Lehmann {s.hodges_lehmann:.3f}  Wilcoxon p={s.p_value:.3g}")
    lines.append(f"{'measured':<10} {smp.n_pairs} AB-BA pairs x {smp.iters_per_block} iters/block "
                 f"on {r.device} ({r.timer}), stopped by {smp.stop_reason}, seed {r.seed}")
    if s.period is not None:
        lines.append(_period_line(s.period))
    if s.outliers:
        lines.append(f"{'outliers':<10} pairs {list(s.outliers)} (MAD rule; kept in the median)")
    for w in r.warnings:
        lines.append(f"{'warning':<10} {w}")
    lines.append(comparison_verdict(r))
    return "\n".join(lines)


def _period_line(p) -> str:
    """The period effect (crossover.PeriodEffect): how the first block of a pair compared with
    the second."""
    lo, hi = p.to_dict()["ci"]
    return (f"{'period':<10} first block of a pair {p.first_over_second:.3f}x the second [{lo:.3f}, {hi:.3f}], "
            f"p={p.p_value:.2g} ({p.n_baseline_first} baseline-first, {p.n_candidate_first} candidate-first pairs; "
            "removed from each pair's ratio)")


def score_table(r: ScoreResult) -> str:
    """The verdict a person reads; the JSON (--json) carries everything else."""
    lines = [f"{'task':<10} {r.task} ({r.task_kind}, {r.device})", f"{'candidate':<10} {r.candidate}"]
    if r.verdict == VERDICT_REJECTED:
        lines.append(f"{'gate':<10} FAIL after {r.checks} checks")
        for reason in r.reasons:
            lines.append(f"{'reason':<10} {reason.code}: {reason.message}")
        lines.append(f"{'reward':<10} 0 (rejected: not timed)" if r.comparison is None else f"{'reward':<10} 0 (rejected)")
    elif r.task_kind == "perf":
        judge = "the problem's own check" if r.benchmarks else "the float64 reference"
        lines.append(f"{'gate':<10} PASS ({r.checks} output checks against {judge})")
        lines += _benchmark_lines(r)
        if r.comparison is not None:
            lines += _comparison_lines(r, r.comparison)
    if r.verdict != VERDICT_REJECTED and r.r_impl is not None:
        lines.append(f"{'R_impl':<10} {r.r_impl:.0f} ({r.tests_passed}/{r.tests_total} tests passed)")
    for w in r.warnings:
        lines.append(f"{'warning':<10} {w}")
    lines.append(f"{'verdict':<10} {r.verdict.upper()}")
    return "\n".join(lines)


def _benchmark_lines(r: ScoreResult) -> list[str]:
    """A problem's benchmarks (GPU MODE, SOL-ExecBench): each one's speedup, their geometric
    mean, s_ref and R_perf; nothing for a task's single timed size."""
    lines = []
    for b in r.benchmarks:
        s = b.comparison.summary.speedup
        shown = ", ".join(f"{k}={v}" for k, v in b.spec.items() if k != "seed")
        lines.append(f"{b.name:<10} {s.value:.3f}x  CI [{s.low:.3f}, {s.high:.3f}]  ({shown}; "
                     f"{b.comparison.samples.n_pairs} pairs)")
    if r.benchmarks:
        g = r.speedup
        lines.append(f"{'speedup':<10} {g.value:.3f}x  {100 * g.confidence:g}% CI [{g.low:.3f}, {g.high:.3f}]  "
                     f"(geometric mean of {len(r.benchmarks)} benchmarks)")
        if r.s_ref is not None:
            lines.append(f"{'s_ref':<10} {r.s_ref:.3f} ({r.s_ref_source})")
        lines.append(f"{'R_perf':<10} " + ("null (no s_ref)" if r.r_perf is None else f"{r.r_perf:.3f}"))
    return lines


def _comparison_lines(r: ScoreResult, c: ComparisonResult) -> list[str]:
    """One timed comparison's lines: the speedup and times, how the processes agreed, the speed
    of light, the threads, the early stop, s_ref and R_perf."""
    s = c.summary
    lines = [f"{'speedup':<10} {s.speedup.value:.3f}x  {100 * s.speedup.confidence:g}% CI "
             f"[{s.speedup.low:.3f}, {s.speedup.high:.3f}]"
             f"  p={s.p_value:.2g}  ({c.samples.n_pairs} AB-BA pairs x {c.samples.iters_per_block} iters)",
             f"{'times':<10} baseline {format_time(median(c.samples.baseline_ns))}, "
             f"candidate {format_time(median(c.samples.candidate_ns))} per call"]
    if s.period is not None:
        lines.append(_period_line(s.period))
    if s.stability is not None:
        lines.append(_processes_line(s.stability))
    if r.sol is not None:
        lines += _sol_lines(r.sol)
    if r.threading:
        lines.append(f"{'threads':<10} {r.threading['threads']} on cores {r.threading['cpus']} "
                     f"(OpenMP {r.threading.get('openmp_runtime')}, wait policy "
                     f"{r.threading.get('omp_wait_policy')})")
    stopping = c.extra.get("stopping") or {}
    if stopping.get("decision"):
        lines.append(f"{'stopped':<10} after {stopping['processes_run']} of {stopping['processes']} processes: "
                     f"{stopping['decision']} (decided on a {100 * stopping['look_confidence']:.1f}% CI)")
    live = r.live_s_ref
    if live is not None:
        lines.append(f"{'s_ref':<10} {live['solution_speedup']:.3f}x live: the solution timed between the "
                     f"candidate's pairs, CI [{live['solution_ci'][0]:.3f}, {live['solution_ci'][1]:.3f}]")
        lines.append(f"{'vs s_ref':<10} {live['candidate_over_solution']:.3f}x the solution, CI "
                     f"[{live['ratio_ci'][0]:.3f}, {live['ratio_ci'][1]:.3f}]")
    elif r.s_ref is not None:
        lines.append(f"{'s_ref':<10} {r.s_ref:.3f} ({r.s_ref_source})")
    if r.r_perf is None:
        lines.append(f"{'R_perf':<10} null (" + ("the solution was not faster than the baseline here)"
                                                 if live is not None else "no s_ref on this device)"))
    else:
        lines.append(f"{'R_perf':<10} {r.r_perf:.3f}")
    return lines


def _processes_line(st) -> str:
    """Each worker process's speedup, whether they agree, and the two parts of their spread."""
    return (f"{'processes':<10} {len(st.process_speedups)}: " + ", ".join(f"{x:.3f}x" for x in st.process_speedups)
            + (f"  UNSTABLE: they differ by {100 * (st.spread - 1):.1f}%, a process's own CI is "
               f"{100 * (st.within_width - 1):.1f}% wide" if st.unstable else "  (agree)")
            + f"; SD {100 * st.within_sd:.1f}% from their pairs, {100 * st.between_sd:.1f}% their own")


def _sol_lines(sol: dict) -> list[str]:
    """The speed-of-light lines: the bound and where it came from, each side's share of it."""
    p, w, c, b = sol["peaks"], sol["work"], sol["candidate"], sol["baseline"]
    rate = (f"{p['bandwidth_bytes_s'] / 1e9:.1f} GB/s {p['bandwidth_kind']} at {p['working_set_bytes'] >> 10} KiB"
            + (f", {p['flop_s'] / 1e9:.1f} GFLOP/s {p['dtype']}" if p.get("flop_s") else ""))
    work = f"{w['bytes'] / 1e6:.2f} MB" + (f", {w['flops'] / 1e6:.1f} MFLOP" if w.get("flops") else "")
    lo, hi = c["fraction_ci"]
    return [f"{'sol':<10} {format_time(sol['t_sol_ns'])} per call, {sol['bound']}-bound ({work}; {rate}, "
            f"{p['source']})",
            f"{'of sol':<10} baseline {100 * b['fraction_of_sol']:.1f}%, candidate {100 * c['fraction_of_sol']:.1f}% "
            f"[{100 * lo:.1f}%, {100 * hi:.1f}%]; SOL score {c['sol_score']:.3f}; headroom {sol['headroom']:.1f}x"]


def validation_table(v: "ValidationReport") -> str:
    lines = [f"{'task':<22} {v.task}"]
    for g in v.gates:
        lines.append(f"{g.name:<22} {'ok  ' if g.ok else 'FAIL'} {g.detail}")
    for w in v.warnings:
        lines.append(f"{'warning':<22} {w}")
    lines.append(f"{'valid':<22} {'yes' if v.ok else 'NO'}")
    return "\n".join(lines)


def selfcheck_table(r: dict) -> str:
    t, c, n, d = r["timer"], r["cache"], r["noise"], r["drift"]
    rows = [("timer", f"{t['timer']}: resolution {format_time(t['resolution_ns'])}, "
                      f"null call {format_time(t['null_call_ns'])}")]
    cache = f"cache {c['cache_bytes'] >> 20} MiB; memory kernel warm {format_time(c['warm_ns'])}"
    if "flushed_ns" in c:
        cache += (f", flushed {format_time(c['flushed_ns'])} ({c['flushed_over_warm']:.2f}x), "
                  f"flush costs {format_time(c['flush_cost_ns'])}")
    rows.append(("cache", cache))
    for kind in ("memory", "compute"):
        k = n[kind]
        rows.append((f"A/A {kind}", f"median |ln s| {k['median_abs_log_s'] * 100:.2f}%, CI +/-"
                                    f"{k['median_ci_half_width'] * 100:.2f}%, 'significant' at p<0.01: "
                                    f"{k['false_significant_p01']}/{k['runs']}"))
    rows.append(("drift", f"load step half-way: AB-BA s={d['abba_speedup']:.3f} (err {d['abba_err'] * 100:.2f}%) "
                          f"vs sequential s={d['sequential_speedup']:.3f} (err {d['sequential_err'] * 100:.1f}%): "
                          f"{d['ratio']:.0f}x"))
    for pct, v in r["sensitivity"].items():
        rows.append((f"detect {pct}", f"yes: {v['pairs']} pairs, {v['seconds']:.1f} s" if v["detected"]
                     else "not within the budget"))
    clk = r.get("clocks") or {}
    if clk:
        rows.append(("clocks", (clk.get("gpu") or {}).get("reason") or f"SM {(clk.get('gpu') or {}).get('sm_mhz')} MHz"))
        for p in clk.get("problems", []):
            rows.append(("", p))
    for task, status in (r.get("tasks") or {}).items():
        rows.append((f"task {task}", status))
    rr = r.get("run_to_run") or {}
    if "runs" in rr:
        rows.append(("run to run", f"{rr['task']}: {len(rr['runs'])} scores, median {rr['median']:.3f}, spread "
                                   f"{(rr['spread'] - 1) * 100:.1f}% vs CI +/-{rr['mean_ci_half_width'] * 100:.1f}%; "
                                   f"CI holds the median (or says unstable) in {rr['honest_runs']}/{len(rr['runs'])}"))
    elif rr:
        rows.append(("run to run", rr.get("skipped") or rr.get("failed", "")))
    rows.append(("time", f"{r['seconds']:.0f} s"))
    rows.append(("verdict", r["verdict"]))
    return "\n".join(f"{a:<16} {b}" for a, b in rows)
