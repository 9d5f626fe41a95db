"""Command line: parse, call the pipeline, print, map errors to exit codes.  No logic here."""
from __future__ import annotations

import atexit
import json
import os
import sys
from pathlib import Path

# Before torch loads in this process (the scorer's own, not the workers': they get the task's
# policy or the runtime's default, isolation/processes/cpu_threads.py): the scorer computes references
# between timed blocks, and its OpenMP threads spinning after those would take cores from the
# next block.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import click

from ..core.errors import PerfbenchError
from ..core.version import __version__
from .batch import score_batch
from .clocks import clock_request, clocks_group
from .output import write_json
from .peaks import peaks
from .scorch import scorch
from .tasks import tasks_group
from .termination import handle_termination


class _Group(click.Group):
    """Turns perfbench's own errors into one line on stderr and their exit code."""

    def invoke(self, ctx):
        handle_termination()
        try:
            return super().invoke(ctx)
        except PerfbenchError as exc:
            click.echo(f"perfbench: error: {exc}", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="perfbench")
def main() -> None:
    """perfbench: is this kernel faster than that one, and is it right?"""


def _score_config(*, pairs: int | None = None, max_pairs: int | None = None, budget: float | None = None,
                  **fields):
    """A ScoreConfig from command-line values; a bad value is a one-line usage error."""
    from ..core.errors import UsageError
    from ..pipeline.config import sampler_config
    from ..pipeline.score import ScoreConfig

    try:
        return ScoreConfig(sampler=sampler_config(min_pairs=pairs, max_pairs=max_pairs, budget=budget), **fields)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _s_ref_option(value: str) -> dict:
    """--s-ref NUMBER | auto | live | table, as ScoreConfig fields."""
    from ..task.bench_configs import s_ref_choice

    number, policy = s_ref_choice(value)
    return {"s_ref": number, "s_ref_policy": policy}


def _package_sources(option: str, values: tuple[str, ...]) -> tuple:
    from ..core.errors import UsageError
    from ..pipeline.config import PackageSource

    try:
        return tuple(PackageSource.parse(v) for v in values)
    except ValueError as exc:
        raise UsageError(f"{option} {exc}") from None


def _log(silent: bool):
    return None if silent else (lambda msg: click.echo(f"perfbench: {msg}", err=True))


def _progress(quiet: bool):
    if quiet or not sys.stderr.isatty():  # a live counter only where it can overwrite itself
        return None

    def show(n, speedup):   # after every pair (the same work whichever side ran first)
        if speedup is not None:
            click.echo(f"\r  {n} pairs: speedup {speedup.value:.3f} [{speedup.low:.3f}, {speedup.high:.3f}]   ",
                       err=True, nl=False)
    return show


@main.command()
@click.argument("baseline_file", type=click.Path(path_type=Path))
@click.argument("candidate_file", type=click.Path(path_type=Path))
@click.option("--fn", "fn_name", default="kernel", show_default=True, help="Function to time in each file.")
@click.option("--inputs", "inputs_name", default="make_inputs", show_default=True,
              help="Input maker make_inputs(seed) -> tuple (taken from the baseline file, "
                   "or the candidate file if the baseline has none).")
@click.option("--device", default="cpu", show_default=True, help="cpu or cuda[:N].")
@click.option("--min-pairs", type=int, default=None, help="Minimum AB-BA pairs (>= 5).")
@click.option("--max-pairs", type=int, default=None, help="Maximum AB-BA pairs.")
@click.option("--budget", type=float, default=None, help="Time budget for measuring, seconds.")
@click.option("--seed", type=int, default=None, help="Master seed (default: drawn at random and recorded).")
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Also write the JSON here.")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
@click.option("--fake-timer", is_flag=True, hidden=True,
              help="Simulated timer (tests): the files define FakeKernel objects.")
def compare(baseline_file, candidate_file, fn_name, inputs_name, device, min_pairs, max_pairs,
            budget, seed, as_json, out, quiet, fake_timer):
    """Time CANDIDATE_FILE's function against BASELINE_FILE's with AB-BA pairs (in-process, trusted code)."""
    from ..pipeline.compare_files import compare_files
    from ..pipeline.config import sampler_config

    cfg = sampler_config(min_pairs=min_pairs, max_pairs=max_pairs, budget=budget)
    timer = None
    if fake_timer:   # (the one place the product imports perfbench.testing: tests/unit/test_layers.py)
        from ..testing.timers import FakeTimer

        timer = FakeTimer()
    result = compare_files(baseline_file, candidate_file, fn_name=fn_name, inputs_name=inputs_name,
                           device=device, config=cfg, seed=seed, progress=_progress(quiet or as_json),
                           timer=timer)
    if not (quiet or as_json):
        click.echo("", err=True)
    write_json(result.to_dict(), out, as_json)
    if not as_json:
        from .report import comparison_table

        click.echo(comparison_table(result))


@main.command()
@click.argument("task_dir", type=click.Path(path_type=Path))
@click.argument("candidate_file", type=click.Path(path_type=Path))
@click.option("--device", default=None, help="cpu or cuda[:N] (default: the task's device).")
@click.option("--pairs", type=int, default=None, help="Minimum AB-BA pairs (>= 5).")
@click.option("--max-pairs", type=int, default=None, help="Maximum AB-BA pairs.")
@click.option("--budget", type=float, default=None, help="Time budget for timing, seconds.")
@click.option("--processes", type=int, default=None,
              help="Fresh worker pairs the pairs are split between (default 3, all measured; with more, a "
                   "score stops after the third or a later one once its reward is settled or its CI "
                   "reached --ci-target; docs/verdict.md).")
@click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE",
              help="KernelBench problems: override a module-level constant (e.g. batch_size=16); GPU MODE: a "
                   "generate_input argument, or benchmarks=0,2; SOL-ExecBench: a const axis, or workloads=0,2.")
@click.option("--entry-point", "entry_point", default=None, metavar="FILE::FUNCTION",
              help="SOL-ExecBench, a source-file candidate: the function to call (default: run).")
@click.option("--dps", "destination_passing", is_flag=True,
              help="SOL-ExecBench, a source-file candidate: it writes into outputs passed after the inputs.")
@click.option("--s-ref", "s_ref", default="auto", show_default=True, metavar="NUMBER|auto|live|table",
              help="Where s_ref comes from: a number; 'live', the task's solution timed in this run; "
                   "'table', bench_configs or the task's default; 'auto', a bench_configs entry measured "
                   "today, else live (docs/verdict.md).")
@click.option("--r-ci", "target_r_ci", type=float, default=0.05, show_default=True,
              help="Stop after a worker process once R_perf's CI is this narrow (0: only when R_perf is "
                   "certainly 0 or 1; docs/verdict.md).")
@click.option("--ci-target", "ci_target", type=float, default=0.03, show_default=True,
              help="With --processes above 3: stop adding processes once the speedup's CI is this narrow "
                   "either side (a fraction; 0: never on its width; docs/verdict.md).")
@click.option("--seed", type=int, default=None, help="Master seed (default: secret, drawn per run, recorded).")
@click.option("--clocks", "clock_policy", default="base", show_default=True,
              help="GPU clock policy while timing: base | max | none | a number of MHz.")
@click.option("--require-locked-clocks", is_flag=True, help="Refuse to time with unlocked GPU clocks (exit 2).")
@click.option("--require-sandbox", is_flag=True,
              help="Refuse to score (exit 2) unless every sandbox layer is active around the candidate.")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="Seconds one candidate call (or one timed block) may take before it is killed; the "
                   "first call includes any compiling on first use (Triton, torch.compile).")
@click.option("--deadline", type=float, default=None, metavar="SECONDS",
              help="Seconds the whole score may take, from when it holds the device; past it the candidate "
                   "is rejected (candidate.timeout) with what had run (default: from the task's time "
                   "budget, docs/verdict.md).")
@click.option("--fresh-workers", is_flag=True,
              help="CPU: start every worker as a new interpreter instead of forking it from a warmed, "
                   "sandboxed zygote (slower; the default forks).")
@click.option("--base-package", "base_packages", multiple=True, metavar="NAME=PATH",
              help="The baseline imports package NAME from the checkout PATH, not the installed one "
                   "(e.g. scorch=../scorch-base; docs/scorch.md).")
@click.option("--cand-package", "cand_packages", multiple=True, metavar="NAME=PATH",
              help="The candidate imports package NAME from the checkout PATH, which its sandbox shows.")
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Also write the JSON here.")
@click.option("--plot", type=click.Path(path_type=Path), default=None, metavar="FILE.png",
              help="Also draw the speed of light as a roofline (docs/speed_of_light.md).")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
def score(task_dir, candidate_file, device, pairs, max_pairs, budget, processes, overrides, entry_point,
          destination_passing, s_ref, target_r_ci, ci_target, seed,
          clock_policy, require_locked_clocks, require_sandbox, timeout, deadline, fresh_workers, base_packages,
          cand_packages, as_json, out, plot, quiet):
    """Gate CANDIDATE_FILE on TASK_DIR, then time it.

    TASK_DIR: a task directory, a KernelBench problem file, a GPU MODE problem directory or a
    SOL-ExecBench problem directory (CANDIDATE_FILE: its solution.json, or a source file).

    Exit status: 0 scored, 1 candidate rejected, 2 usage or environment error.
    """
    from ..core.errors import EXIT_REJECTED
    from ..core.verdict import VERDICT_REJECTED
    from ..pipeline.score import score as run_score
    from ..task.spec import parse_overrides
    from .report import score_table

    cfg = _score_config(pairs=pairs, max_pairs=max_pairs, budget=budget, device=device, **_s_ref_option(s_ref),
                        seed=seed,
                        target_r_ci=target_r_ci, ci_target=ci_target or None, call_timeout_s=timeout,
                        deadline_s=deadline, clocks=clock_request(clock_policy, require=require_locked_clocks),
                        require_sandbox=require_sandbox, fork_workers=not fresh_workers,
                        base_packages=_package_sources("--base-package", base_packages),
                        cand_packages=_package_sources("--cand-package", cand_packages),
                        **({"processes": processes} if processes is not None else {}))
    say = _log(quiet or as_json)
    result = run_score(task_dir, candidate_file, cfg, overrides=parse_overrides(overrides),
                       progress=_progress(quiet or as_json), log=say, entry_point=entry_point,
                       destination_passing=destination_passing)
    if say:
        click.echo("", err=True)
    write_json(result.to_dict(), out, as_json)
    if not as_json:
        click.echo(score_table(result))
    if plot is not None:
        _plot(result, plot)
    sys.exit(EXIT_REJECTED if result.verdict == VERDICT_REJECTED else 0)


def _plot(result, path: Path) -> None:
    """The roofline, or a line on stderr saying why there is none (the verdict stands)."""
    from .roofline import write_roofline

    sections = [(result.task, result.sol)] if result.sol else [
        (f"{result.task} {b.name}", b.sol) for b in result.benchmarks if b.sol_inputs]
    if not sections:
        click.echo(f"perfbench: no roofline drawn: the verdict has no speed-of-light section ({result.verdict})",
                   err=True)
        return
    for i, (title, sol) in enumerate(sections):   # GPU MODE: one file per benchmark, numbered
        write_roofline(sol, path if i == 0 else path.with_stem(f"{path.stem}-{i}"), title)


@main.command()
@click.argument("task_dir", type=click.Path(path_type=Path))
@click.option("--device", default=None, help="cpu or cuda[:N] (default: the task's device).")
@click.option("--pairs", type=int, default=None, help="Minimum AB-BA pairs (>= 5).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
def validate(task_dir, device, pairs, as_json, quiet):
    """Check TASK_DIR's validity gates on this machine (exit 0 valid, 1 not valid)."""
    from ..core.errors import EXIT_REJECTED
    from ..pipeline.validate import validate as run_validate
    from .report import validation_table

    report = run_validate(task_dir, _score_config(pairs=pairs, device=device), log=_log(quiet or as_json))
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else validation_table(report))
    sys.exit(0 if report.ok else EXIT_REJECTED)


@main.command()
@click.argument("task_dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--plan", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="A calibration plan (calibrate/cpu.toml, calibrate/gpu.toml) instead of TASK_DIRS.")
@click.option("--device", default=None, help="cpu or cuda[:N] (default: each task's device / the plan's).")
@click.option("--pairs", type=int, default=None, help="Minimum AB-BA pairs (>= 5).")
@click.option("--out-dir", type=click.Path(path_type=Path), default=None,
              help="Where the per-device TOML goes (default: the repository's bench_configs/).")
@click.option("--runs", type=click.IntRange(1, 50), default=3, show_default=True,
              help="Independent scorings per task; s_ref is their median (a plan sets its own).")
@click.option("--remeasure", is_flag=True,
              help="With --plan: measure every task again, even those this plan already measured here "
                   "(a task whose new interval misses the old one is marked invalid).")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
def calibrate(task_dirs, plan, device, pairs, out_dir, runs, remeasure, quiet):
    """Measure each task's s_ref on this machine and write it to bench_configs/<device>.toml.

    With --plan: also the starter and an A/A noise floor per task, a validity verdict, the TOML
    written after every task, and a rerun resumes where an interrupted one stopped."""
    from ..core.errors import UsageError
    from ..pipeline.calibrate import calibrate as run_calibrate
    from ..pipeline.calibrate import calibrate_plan
    from ..pipeline.calibration_plan import CalibrationPlan

    if (plan is None) == (not task_dirs):
        raise UsageError("calibrate: give TASK_DIRS or --plan FILE (one of them)")
    cfg = _score_config(pairs=pairs, device=device)
    if plan is not None:
        paths, found = calibrate_plan(CalibrationPlan.load(plan), cfg, out_dir=out_dir, log=_log(quiet),
                                      remeasure=remeasure)
    else:
        if remeasure:
            raise UsageError("calibrate: --remeasure goes with --plan (without one every task is measured anyway)")
        paths, found = run_calibrate(list(task_dirs), cfg, out_dir=out_dir, runs=runs, log=_log(quiet))
    for c in found:
        spread = ", ".join(f"{x:.3f}" for x in c.runs)
        extra = dict(c.extra)
        verdict = "" if "valid" not in extra else ("  valid" if extra["valid"] else
                                                   "  INVALID: " + "; ".join(extra["invalid_because"]))
        floor = f"; A/A {extra['noise_floor'][0]:.3f}" if extra.get("noise_floor") else ""
        starter = f"; starter {extra['starter'][0]:.3f}" if extra.get("starter") else ""
        click.echo(f"{c.task:<20} s_ref {c.s_ref:.3f}  (runs {spread}; CIs span [{c.ci_low:.3f}, {c.ci_high:.3f}], "
                   f"{c.n_pairs} pairs{starter}{floor}){verdict}")
    for path in paths:
        click.echo(f"wrote {path}")


@main.command()
@click.option("--device", default=None, help="cpu or cuda[:N] (default: cuda if present, else cpu).")
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
def env(device, as_json):
    """Describe this machine for benchmarking: device, driver, clocks, lock permission, a verdict."""
    from ..device.environment import environment_report, format_environment

    report = environment_report(device)
    click.echo(json.dumps(report, indent=2, default=str) if as_json else format_environment(report))


@main.command()
@click.option("--device", default="cpu", show_default=True, help="cpu or cuda[:N].")
@click.option("--quick", is_flag=True, help="Fewer repetitions (about a minute).")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="Write selfcheck.json and selfcheck.png into this folder.")
@click.option("--skip-tasks", is_flag=True, help="Do not gate or score the shipped tasks (no run-to-run section).")
def selfcheck(device, quick, as_json, out_dir, skip_tasks):
    """Measure this machine's timer, cache flush, noise floor, drift robustness and sensitivity."""
    from ..device.check import check_device
    from ..device.environment import environment_report
    from ..selfcheck.backend import cpu_backend, cuda_backend
    from ..selfcheck.run import SelfcheckConfig, plot, run_selfcheck
    from ..selfcheck.run_to_run import run_to_run_section
    from ..selfcheck.tasks_gate import gate_shipped_tasks
    from .report import selfcheck_table

    device = check_device(device)
    backend = cuda_backend(device) if device.startswith("cuda") else cpu_backend()
    cfg = SelfcheckConfig(quick=quick)
    say = _log(as_json) or (lambda m: None)
    report = run_selfcheck(backend, cfg, env=lambda: environment_report(device),
                           tasks=None if skip_tasks else (lambda: gate_shipped_tasks(device)),
                           run_to_run=None if skip_tasks else (lambda: run_to_run_section(device, cfg.scores, say=say)),
                           say=say)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_json(report, out_dir / "selfcheck.json", False)
        plot(report, out_dir / "selfcheck.png")
    click.echo(json.dumps(report, indent=2, default=str) if as_json else selfcheck_table(report))


main.add_command(scorch)
main.add_command(score_batch)
main.add_command(tasks_group)
main.add_command(clocks_group)
main.add_command(peaks)


def entry() -> None:
    """The console script (and `python -m perfbench.cli.main`): `main`, then an exit that skips the
    interpreter's teardown.

    With torch and scipy loaded, tearing the interpreter down took ~0.65 s on the two-core host,
    after the verdict was already written: a tenth of a short score's wall time.  Nothing is lost
    by skipping it: the atexit handlers (the warm parent's close, Ray's shutdown) run first, and
    the output streams are flushed; files were closed where they were written.  An exception
    that is not an exit (perfbench's own bug) takes the normal path, traceback and all."""
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):   # sys.exit("message"): printed, status 1, as Python does
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed pipe: nothing more can be written anyway
            code = code or 1
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
