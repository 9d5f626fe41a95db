"""In-worker integrity checks: captured before the candidate loads, verified after each call.

These are tripwires, not a sandbox: hostile code in the same process can undo anything here.
What makes the score trustworthy is that the scorer re-checks outputs from raw bytes and
wall-clocks every block; these checks give cheap, specific reasons for the common exploits.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any

import torch

from ...timing import timers
from ...timing.cuda import checksum
from ...timing.cuda import timer as cuda


def _targets() -> dict[str, tuple[Any, str]]:
    t = {
        "time.perf_counter_ns": (time, "perf_counter_ns"),
        "time.perf_counter": (time, "perf_counter"),
        "time.monotonic_ns": (time, "monotonic_ns"),
        "CpuTimer.time_block": (timers.CpuTimer, "time_block"),
        "CudaEventTimer.time_block": (cuda.CudaEventTimer, "time_block"),
        "CudaEventTimer._timed_call": (cuda.CudaEventTimer, "_timed_call"),
        "CudaEventTimer._digest_outputs": (cuda.CudaEventTimer, "_digest_outputs"),
        "cuda.digest": (cuda, "digest"),
        "checksum.digest": (checksum, "digest"),
        "torch.cuda.synchronize": (torch.cuda, "synchronize"),
        "torch.cuda.Event": (torch.cuda, "Event"),
        "torch.cuda.Event.record": (torch.cuda.Event, "record"),
        "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time"),
        "torch.cuda.Event.synchronize": (torch.cuda.Event, "synchronize"),
        "torch.Tensor.to": (torch.Tensor, "to"),
        "torch.Tensor.contiguous": (torch.Tensor, "contiguous"),
        "torch.Tensor.numpy": (torch.Tensor, "numpy"),
    }
    return t


def _child_pids() -> set[int]:
    """This process's live children: each of its threads' `children` file (the kernel's list,
    re-parented orphans included), not a scan of every process in /proc.

    The scan read one stat file per process in this PID namespace: about 1 ms in the scorer's
    (~70 processes here, more on a busy host), a few in a sandbox's.  Run before every block,
    it cost the baseline's worker 1.1 ms more than the candidate's, and the candidate's block
    that opened a pair read 2% faster than the baseline's in the same place (#38; A/A of
    row_softmax, 3,553 pairs).  Where the kernel has no `children` files, the scan remains."""
    kids = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return kids
    listed: list[str] = []
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                listed += f.read().split()
        except FileNotFoundError:
            if os.path.isdir(f"/proc/self/task/{tid}"):   # the thread is there, its file is not
                return _child_pids_by_scan()
            continue   # (a thread that ended since the listing)
        except OSError:
            continue
    for pid in listed:
        if _live_child(pid, str(os.getpid())):
            kids.add(int(pid))
    return kids


def _live_child(pid: str, parent: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return len(fields) > 1 and fields[1] == parent and fields[0] != "Z"


def _child_pids_by_scan() -> set[int]:
    """The same, by reading every process's stat file (kernels without CONFIG_PROC_CHILDREN)."""
    me = str(os.getpid())
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    return {int(e) for e in entries if e.isdigit() and _live_child(e, me)}


class Integrity:
    """Snapshot of primitives, threads and child processes; `violations()` names what changed."""

    def __init__(self) -> None:
        self._captured = {name: getattr(obj, attr) for name, (obj, attr) in _targets().items()}
        self._threads = set(threading.enumerate())
        self._children = _child_pids()

    def new_threads(self) -> list[threading.Thread]:
        """Threads alive now that were not at the snapshot."""
        return [t for t in threading.enumerate() if t not in self._threads and t.is_alive()]

    def violations(self) -> list[tuple[str, str]]:
        found = []
        patched = [name for name, (obj, attr) in _targets().items()
                   if getattr(obj, attr, None) is not self._captured[name]]
        if patched:
            found.append(("tamper.timer_patched", f"timing/sync primitives replaced: {', '.join(patched)}"))
        threads = [t.name for t in self.new_threads()]
        if threads:
            found.append(("tamper.background_thread", f"threads still running after the call: {', '.join(threads)}"))
        kids = _child_pids() - self._children
        if kids:
            found.append(("tamper.child_process", f"child processes alive after the call: {sorted(kids)}"))
        # A mode left on torch's stacks sees every op the worker itself runs afterwards (e.g. a
        # TorchFunctionMode that fills an empty output when it is detached for serialising).
        modes = torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()
        if any(modes):
            found.append(("tamper.mode_stack", f"torch function/dispatch modes left active: {modes[0]}/{modes[1]}"))
        return found
