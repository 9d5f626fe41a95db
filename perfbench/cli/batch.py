"""`perfbench score-batch`: parse, run the batch (perfbench/batch), print progress and the summary."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from ..core.errors import EXIT_USAGE


def _eta(done: int, total: int, started: float) -> str:
    if not done:
        return ""
    left = (time.monotonic() - started) / done * (total - done)
    return f"ETA {int(left // 60)}m{int(left % 60):02d}s" if total > done else "done"


def _describe(rec) -> str:
    if rec.outcome == "error":
        return f"error ({rec.error_kind}): {rec.error}"
    if rec.outcome == "rejected":
        return f"rejected: {', '.join(rec.reasons)}"
    r = "null" if rec.r_perf is None else f"{rec.r_perf:.3f}"
    return f"s={rec.speedup:.3f}x R_perf={r}"


@click.command("score-batch")
@click.argument("manifest", type=click.Path(path_type=Path))
@click.option("--task", "task_dir", type=click.Path(path_type=Path), default=None,
              help="With a directory of candidates: the task they are scored on.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("results.jsonl"), show_default=True,
              help="Records appended here as rows finish; rows already in it are not scored again.")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--address", default=None, help="Ray cluster address (default: a local Ray instance).")
@click.option("--slots", type=int, default=None, help="Local: at most this many CPU rows at once (default: one per core).")
@click.option("--processes", type=int, default=3, show_default=True, help="Worker processes per score.")
@click.option("--pairs", type=int, default=None, help="Minimum AB-BA pairs per score (>= 5).")
@click.option("--max-pairs", type=int, default=None, help="Maximum AB-BA pairs per score.")
@click.option("--budget", type=float, default=None, help="Time budget for one score's timing, seconds.")
@click.option("--s-ref", "s_ref", default="auto", show_default=True, metavar="NUMBER|auto|live|table",
              help="Where every row's s_ref comes from, as for `perfbench score` (docs/verdict.md).")
@click.option("--r-ci", "target_r_ci", type=float, default=0.05, show_default=True,
              help="Stop a score once R_perf's CI is this narrow (docs/verdict.md).")
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds one candidate call may take.")
@click.option("--deadline", type=float, default=None, metavar="SECONDS",
              help="Seconds one whole score may take; past it the candidate is rejected (candidate.timeout), "
                   "not retried (default: from the task's time budget, docs/verdict.md).")
@click.option("--device", default=None, help="cpu or cuda[:N] for every row (default: each task's).")
@click.option("--require-sandbox", is_flag=True, help="Refuse rows unless every sandbox layer is active.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
def score_batch(manifest, task_dir, out, backend, address, slots, processes, pairs, max_pairs, budget, s_ref,
                target_r_ci, timeout, deadline, device, require_sandbox, as_json, quiet):
    """Score every (task, candidate) row of MANIFEST (.jsonl or .csv with task,candidate[,id]
    columns, or a directory of candidate files with --task), each in a fresh scorer process.

    Exit status: 0 when every row has a verdict (scored or rejected), 2 on a usage error or
    when any row errored (its task or candidate could not be used, or its scorer failed; stderr
    names those rows, the records say why).
    """
    from ..batch import BatchOptions, BatchSummary, ResultsFile, read_manifest, run_batch

    from ..task.bench_configs import s_ref_choice

    rows = read_manifest(manifest, task_dir)
    s_ref, s_ref_policy = s_ref_choice(s_ref)
    options = BatchOptions(processes=processes, min_pairs=pairs, max_pairs=max_pairs, budget_s=budget, s_ref=s_ref,
                           s_ref_policy=s_ref_policy,
                           target_r_ci=target_r_ci, call_timeout_s=timeout, deadline_s=deadline,
                           require_sandbox=require_sandbox,
                           device=device)
    options.score_config()   # a bad option is one usage error now, not one per row
    results = ResultsFile.open(out)
    say = None if quiet else (lambda m: click.echo(f"perfbench: {m}", err=True))
    todo = sum(1 for r in rows if r.id not in results.done)
    if say:
        say(f"{len(rows)} rows, {len(rows) - todo} already in {out}, {todo} to score ({backend})")
    started, finished = time.monotonic(), []

    def on_record(rec) -> None:
        finished.append(rec)
        if say:
            say(f"[{len(finished)}/{todo}] {rec.id}: {_describe(rec)} ({rec.wall_s:.1f} s) "
                f"{_eta(len(finished), todo, started)}")

    run_batch(rows, options, results, backend=backend, slots=slots, address=address, on_record=on_record)
    summary = BatchSummary(tuple(results.done[r.id] for r in rows), time.monotonic() - started, len(finished))
    click.echo(json.dumps(summary.to_dict(), indent=2, sort_keys=True) if as_json else summary.table())
    errored = [r for r in summary.records if r.outcome == "error"]
    if errored:
        named = ", ".join(f"{r.id} ({r.error_kind})" for r in errored[:5])
        more = f" and {len(errored) - 5} more" if len(errored) > 5 else ""
        click.echo(f"perfbench: {len(errored)} of {len(summary.records)} rows errored, without a verdict: "
                   f"{named}{more} (see {out})", err=True)
        sys.exit(EXIT_USAGE)
