"""What the candidate's sandbox shows, and the zygotes a CPU score forks its workers from
(`start_scorer`: what `score` sets up before it imports torch).

Imports no torch: `score` spawns the zygotes before it imports torch itself, so that the three
imports (~1 s of CPU each) share the cores instead of running one after another."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import EnvironmentUnavailable
from ..isolation.processes.cpu_threads import CpuThreading
from ..isolation.processes.warm_parent_handle import WarmParent, WarmParents
from ..isolation.processes.fork_server import ForkServer
from ..isolation.sandbox.hardening import OOM_SCORE_SCORER, set_oom_score
from ..isolation.sandbox.plan import make_nondumpable
from ..isolation.sandbox.worker_view import package_source_tree, refuse_if_holding
from ..task.gpumode import utils_dir
from ..task.solexec import DEFINITION, WORKLOADS
from ..task.spec import FORMAT_GPUMODE, FORMAT_KERNELBENCH, FORMAT_SOLEXEC, TaskSpec
from .config import PackageSource, ScoreConfig


def candidate_files(spec: TaskSpec, cand_path: Path,
                    sources: tuple[PackageSource, ...] = ()) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(expose, hide) for the candidate's sandbox.  It sees the candidate, the task's own
    top-level files but the solution and the reference (unless one of them is the candidate),
    what the task shares (`[sandbox] shared`: kernel sources) and the source trees of the packages
    it names (`[sandbox] packages`: Scorch); not the task's subdirectories
    (`__pycache__` holds the solution compiled), not the rest of the repository; the checkouts
    it imports packages from (`sources`, instead of the installed ones).  `hide` covers the
    secret files should an exposed directory hold them after all."""
    cand = cand_path.resolve()
    if spec.format == FORMAT_KERNELBENCH:
        return (str(cand), str(spec.root.resolve())), ()
    if spec.format == FORMAT_GPUMODE:   # task.py, utils.py, reference.py (public; the worker makes inputs from it)
        root = spec.root.resolve()
        files = [f for f in root.iterdir() if f.is_file() and f.suffix in (".py", ".yml")]
        u = utils_dir(root)
        files += [u / "utils.py"] if u is not None and u != root else []
        # (only those files: the other submissions under solutions/ stay out of sight)
        return (str(cand), *sorted(str(f) for f in files if f.resolve() != cand)), ()
    if spec.format == FORMAT_SOLEXEC:   # the problem's two files, its safetensors; the solution's sources
        root = spec.root.resolve()
        blobs = {str(root / s["path"]) for case in spec.cases.values() for s in case["inputs"].values()
                 if s["type"] == "safetensors"}
        return (str(cand), str(root / DEFINITION), str(root / WORKLOADS), *sorted(blobs), *spec.shared), ()
    secret = {spec.file(role).resolve() for role in ("solution", "reference")} - {cand}
    root = spec.root.resolve()
    task_files = sorted(str(f) for f in root.iterdir() if f.is_file() and f.resolve() not in secret)
    keep_out = (str(root), str(Path(__file__).resolve().parents[2]))   # the task; perfbench's checkout
    overridden = {src.name for src in sources}
    packages = [package_source_tree(name, keep_out) for name in spec.packages if name not in overridden]
    for src in sources:
        refuse_if_holding(str(src.tree), keep_out, f"--cand-package {src.name}={src.tree}")
        packages.append(str(src.tree))
    return (str(cand), *task_files, *spec.shared, *packages), (*sorted(map(str, secret)), str(root / "__pycache__"))


def candidate_fork_server(spec: TaskSpec, cand_path: Path, cfg: ScoreConfig, threading: CpuThreading | None = None,
                          parent: WarmParent | None = None) -> ForkServer:
    """The zygote the candidate's workers are forked from: the sandbox `candidate_worker` would have."""
    expose, hide = candidate_files(spec, cand_path, cfg.cand_packages)
    return ForkServer("candidate", untrusted=True, sandbox=cfg.sandbox, hide=hide, expose=expose, threading=threading,
                      parent=parent)


def spawn_zygotes(spec: TaskSpec, device: str, cand_path: Path, cfg: ScoreConfig, threading: CpuThreading | None,
                  baseline: bool = True, parent: WarmParent | None = None) -> dict[str, ForkServer]:
    """CPU: one zygote per side (the baseline's only if `baseline`: a batch's pool keeps its
    workers), spawned and left importing torch, or asked of `parent`; `ForkServer.start` waits
    for them.  CUDA workers stay fresh interpreters (a process that has touched CUDA cannot
    fork): none."""
    if device != "cpu" or not cfg.fork_workers:
        return {}
    servers = {"candidate": candidate_fork_server(spec, cand_path, cfg, threading, parent)}
    if baseline:
        try:
            servers["baseline"] = ForkServer("baseline", untrusted=False, sandbox=cfg.sandbox, threading=threading,
                                             parent=parent)
        except BaseException:
            servers["candidate"].close()
            raise
    return servers


@dataclass(frozen=True)
class ScorerStart:
    """What `score` set up before importing torch: the cores and thread counts of the lease
    (CPU), the zygotes (owned, and closed, by `score`), and whether the scorer made itself
    non-dumpable before any sandboxed process existed."""

    threading: CpuThreading | None
    servers: dict[str, ForkServer]
    nondumpable: bool


def start_scorer(spec: TaskSpec, device: str, cand_path: Path, cfg: ScoreConfig, threading: CpuThreading | None,
                 baseline: bool = True, parents: WarmParents | None = None) -> ScorerStart:
    """PR_SET_DUMPABLE 0 on this process first (sandbox.make_nondumpable), then the zygotes: asked
    of a warm parent (`parents`, default this process's: its torch import overlaps this
    process's on a first score, and is done by the next), or spawned where none can run."""
    nondumpable = make_nondumpable()
    set_oom_score(OOM_SCORE_SCORER)   # the OOM killer's last pick; its workers its first
    parent = None
    if device == "cpu" and cfg.fork_workers and cfg.warm_parent:
        with contextlib.suppress(EnvironmentUnavailable):   # (the zygotes are spawned instead)
            parent = (parents if parents is not None else WarmParents.shared()).get(threading)
    return ScorerStart(threading, spawn_zygotes(spec, device, cand_path, cfg, threading, baseline, parent), nondumpable)
