"""Starting and ending the scorer's child interpreters (workers and zygotes): the command line,
environment and file descriptors they start with, their log's tail, and killing all they started.

Imports no torch: the scorer spawns its zygotes before it imports torch itself, so that the
three imports share the cores (pipeline/score.py).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from ...system.procfs import child_pids
from ..sandbox.orphan_guard import guard
from ..sandbox.plan import SandboxPlan, scorer_namespace_env
from .cpu_threads import WAIT_VARS, CpuThreading


def _worker_env() -> dict[str, str]:
    # The worker must import this very perfbench, installed or not.
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    # The OpenMP wait policy is the task's or the runtime's default, never the scorer's
    # environment's (the CLI sets PASSIVE for itself): the idle worker is frozen while the other
    # is timed, so its spinning threads cannot steal the timed side's cores (cpu_threads.py).
    for var in WAIT_VARS:
        env.pop(var, None)
    return env


def spawn(module: str, args: list[str], plan: SandboxPlan, pass_fds: tuple[int, ...], log: Path | int,
          threading: CpuThreading | None) -> subprocess.Popen:
    """`python -m module args...` wrapped in `plan`: a fresh interpreter in its own session, with no
    fds but `pass_fds` and its log (stdout and stderr: a file, or an fd such as a LogTail's pipe),
    so killpg() reaches anything it starts."""
    with contextlib.ExitStack() as stack:
        out = log if isinstance(log, int) else stack.enter_context(open(log, "wb"))
        proc = subprocess.Popen(plan.wrap([sys.executable, "-m", module, *args]),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                pass_fds=pass_fds, start_new_session=True, env=child_env(plan, threading))
    guard().watch_process(proc.pid)   # killed with its session should this scorer be killed first
    return proc


def child_env(plan: SandboxPlan, threading: CpuThreading | None) -> dict[str, str]:
    """The environment a child interpreter of the scorer starts with inside `plan`."""
    env = dict(_worker_env(), **scorer_namespace_env())
    return plan.env(threading.env(env) if threading is not None else env)


def interpreter_pid(spawned: int, plan: SandboxPlan) -> int:
    """The Python interpreter `spawn` started: the spawned process when it exec'd straight into
    Python, else the one child `unshare --fork` made (PID 1 of the new namespace)."""
    kids = child_pids(spawned) if plan.namespaces else []
    return kids[0] if len(kids) == 1 else spawned


def read_tail(path: Path, limit: int) -> str:
    """The last `limit` bytes of a log: only the tail (a candidate can make its log as large as
    the file-size bound)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - limit))
            return f.read(limit).decode(errors="replace")
    except OSError:
        return ""


def last_output(tail: str) -> str:
    """"; last output: LINE" for a message that says why a process was lost (its log's last
    non-empty line, at most 200 characters), or "" when it said nothing."""
    lines = tail.strip().splitlines()
    return f"; last output: {lines[-1][:200]}" if lines else ""


def kill_group(plan: SandboxPlan, proc: Any) -> None:
    """SIGKILL everything in the plan's cgroup (whatever it forked, setsid or not) and the
    process's group, and reap the process."""
    if plan.cgroup is not None:
        plan.cgroup.kill()
    with contextlib.suppress(ProcessLookupError, PermissionError):   # (already gone)
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):   # pragma: no cover - SIGKILL is not ignorable
        proc.wait(timeout=5)
