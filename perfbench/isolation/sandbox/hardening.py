"""What a worker process does to itself before any task code runs (and the zygote before it
forks workers, who inherit it): keep only its own fds, keep freed memory in the heap, bound the
files it writes, refuse the kernel's keyrings, adopt what its children orphan."""
from __future__ import annotations

import os
import sys

from ...system import host


def _keep_freed_memory_in_heap() -> None:
    """Make glibc reuse freed blocks up to 32 MB (instead of fresh zeroed mmap pages), so that
    the poison written before a call is what an unwritten output contains.  Linux/glibc only."""
    host.mallopt(host.M_MMAP_THRESHOLD, 32 << 20)
    host.mallopt(host.M_TRIM_THRESHOLD, 512 << 20)


def close_other_fds(keep: set[int]) -> None:
    # Popen already passes only fds 0-2 and the pipe; this also drops anything a site hook opened.
    for other in range(3, 1024):
        if other not in keep:
            try:
                os.close(other)
            except OSError:
                pass


# No file a worker writes may grow past this (SIGXFSZ kills the writer).  Its stdout and stderr
# are a log file on the host's disk: unbounded, one candidate printing in a loop fills the disk.
# Generous for honest use (compiled extensions are megabytes).  Where the worker stays root
# (no uid to switch to) the candidate could raise it again: the other layers still hold.
MAX_FILE_BYTES = 1 << 30


def _bound_file_sizes() -> None:
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    cap = MAX_FILE_BYTES if hard == resource.RLIM_INFINITY else min(hard, MAX_FILE_BYTES)
    resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))


def set_dumpable(value: int) -> bool:
    """PR_SET_DUMPABLE: 0 closes this process's memory (/proc/<pid>/mem, ptrace, pidfd_getfd) to
    every process without CAP_SYS_PTRACE, same uid included."""
    return host.prctl(host.PR_SET_DUMPABLE, value) == 0


def adopt_orphans() -> None:
    """PR_SET_CHILD_SUBREAPER: whatever the candidate double-forks is re-parented to this worker
    when its parent exits (not to the zygote, or the host's init), so the child-process
    tripwire sees it.  (A fresh sandboxed worker is its PID namespace's init, which does this.)"""
    host.prctl(host.PR_SET_CHILD_SUBREAPER, 1)


def drop_working_directory_from_path() -> None:
    """`python -m` puts the working directory first on sys.path: in the sandbox, the private
    directory the candidate may write (and, for a zygote, shared by all its processes).  A module
    planted there must never be what the worker's own code imports later."""
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", cwd)]


# /proc/self/oom_score_adj (#58 (4)): when memory runs out, the kernel kills a worker (or the
# zygote it came from) first and the scorer last, so a candidate that exhausts the host gets a
# verdict (`resource.memory`, `candidate.crashed`) instead of killing the process that would give it.
OOM_SCORE_WORKER = 1000
OOM_SCORE_SCORER = -900   # lowering needs CAP_SYS_RESOURCE (root); elsewhere it stays as it was


def set_oom_score(value: int) -> bool:
    """This process's (and its later children's) oom_score_adj; whether the kernel took it."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write(str(value))
        return True
    except OSError:
        return False


def harden_process(keep: set[int]) -> None:
    """Before anything else runs in a worker (or the zygote every worker is forked from): the
    kernel's first pick when memory runs out, only the fds it was given, freed memory kept in the
    heap, files bounded, no writable directory on sys.path, no kernel keyrings and no userfaultfd
    (syscall_filter.py; the probe records whether it holds)."""
    from .syscall_filter import deny_syscalls

    drop_working_directory_from_path()
    set_oom_score(OOM_SCORE_WORKER)
    close_other_fds(keep)
    _keep_freed_memory_in_heap()
    _bound_file_sizes()
    deny_syscalls()
