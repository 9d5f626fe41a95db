"""`perfbench tasks list`: the shipped (or any) tasks, and whether this machine has a valid s_ref
for each.  Parsing and printing only."""
from __future__ import annotations

from pathlib import Path

import click


def default_tasks_dir() -> Path:
    from ..task.bench_configs import default_dir
    return default_dir().parent / "tasks"


def s_ref_here(spec, configs_dir: Path | None = None) -> str:
    """This machine's s_ref for the task, said in words: valid, invalid (why), measured on other
    task files, none, no device."""
    from ..device.fingerprint import fingerprint
    from ..task import bench_configs

    if spec.kind != "perf":
        return "- (impl)"
    if spec.device == "cuda":
        import torch
        if not torch.cuda.is_available():
            return "no GPU here"
    key = bench_configs.device_key(spec.device, fingerprint(spec.device), spec.threads)
    found = bench_configs.lookup(spec.name, key, configs_dir)
    if found is None:
        default = f"; task default {spec.s_ref_default:g}" if spec.s_ref_default else ""
        return f"none for {key}{default}"
    if found.invalid:
        return f"{found.value:.3f} INVALID ({'; '.join(found.invalid)})"
    from ..task.timed_files import timed_files_digest
    if found.other_task_files(timed_files_digest(spec)):
        return f"{found.value:.3f} measured on other task files ({found.source}): recalibrate"
    return f"{found.value:.3f} valid ({found.source})"


def is_task_dir(path: Path) -> bool:
    from ..task.gpumode import is_problem_dir as is_gpumode
    from ..task.solexec import is_problem_dir as is_solexec

    return (path / "task.toml").is_file() or is_gpumode(path) or is_solexec(path)


def task_dirs(root: Path) -> list[Path]:
    """The task directories in `root`, and in its folders that are not tasks themselves
    (SOL-ExecBench's examples/<language>/<problem>)."""
    found = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        found += [d] if is_task_dir(d) else sorted(p for p in d.iterdir() if p.is_dir() and is_task_dir(p))
    return found


@click.group("tasks")
def tasks_group() -> None:
    """The tasks perfbench can score."""


@tasks_group.command("list")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), required=False)
@click.option("--dir", "tasks_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the task directories are (default: the repository's tasks/); or give DIRECTORY.")
def tasks_list(directory, tasks_dir):
    """Each task in DIRECTORY, or one folder below it (perfbench task directories, GPU MODE and
    SOL-ExecBench problem directories): kind, device, family, timed sizes, and this machine's
    s_ref (valid, invalid or none)."""
    from ..core.errors import UsageError
    from ..task.spec import load_task

    root = directory or tasks_dir or default_tasks_dir()
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory")
    rows = [("task", "kind", "device", "family", "timed", "s_ref here")]
    for d in task_dirs(root):
        spec = load_task(d)
        timed = f"{len(spec.benchmarks)} benchmarks" if spec.benchmarks else spec.timed_size
        rows.append((str(d.relative_to(root)), spec.kind, spec.device, spec.family, timed, s_ref_here(spec)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
