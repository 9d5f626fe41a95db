"""What the scorer can see of a worker from outside: CPU time of everything in its session.

Read from /proc by the trusted parent, so the candidate cannot fake it.  Linux only; elsewhere
the functions report None and the checks that use them are skipped.
"""
from __future__ import annotations

import os

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# The unit /proc counts a process's CPU in (a clock tick, 10 ms on Linux): its user and system
# times are each cut down to whole ticks, so a reading is up to two ticks below the truth.
TICK_S = 1.0 / _TICKS


def _stat_fields(pid: str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _live_pids_where(field: int, value: int) -> list[int]:
    """Live (non-zombie) processes whose stat field `field` (after the ')') equals `value`."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    out = []
    for e in entries:
        if e.isdigit():
            f = _stat_fields(e)
            if f is not None and len(f) > field and f[field] == str(value) and f[0] != "Z":
                out.append(int(e))
    return out


def session_pids(sid: int) -> list[int]:
    """Live processes in session `sid`."""
    return _live_pids_where(3, sid)


def child_pids(ppid: int) -> list[int]:
    """Live processes whose parent is `ppid`."""
    return _live_pids_where(1, ppid)


def host_pid_of(ns_pid: int, parent: int) -> int | None:
    """The pid (in our namespace) of `parent`'s child whose pid in its own PID namespace is
    `ns_pid` (the last field of NSpid), or None."""
    for kid in child_pids(parent):
        try:
            for line in open(f"/proc/{kid}/status", encoding="ascii", errors="replace"):
                if line.startswith("NSpid:"):
                    if int(line.split()[-1]) == ns_pid:
                        return kid
                    break
        except (OSError, ValueError):
            continue
    return None


def session_cpu_seconds(sid: int) -> float | None:
    """User+system CPU seconds of all live processes in session `sid` (the worker's own)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    total = 0
    for e in entries:
        if not e.isdigit():
            continue
        f = _stat_fields(e)
        # after the ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
        if f is not None and len(f) > 12 and f[3] == str(sid):
            total += int(f[11]) + int(f[12])
    return total / _TICKS


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pid_namespace() -> str:
    """This process's pid namespace id (digits of /proc/self/ns/pid)."""
    try:
        return "".join(c for c in os.readlink("/proc/self/ns/pid") if c.isdigit()) or "0"
    except OSError:
        return "0"


def owner_tag() -> str:
    """`<pid namespace>-<pid>`: put in the name of what this scorer leaves in shared places (a
    cgroup, a private directory), so a later scorer can tell when its owner is gone."""
    return f"{pid_namespace()}-{os.getpid()}"


def owner_gone(namespace: str, pid: str) -> bool:
    """The owner named by a tag is dead.  Only decidable in our own pid namespace (scorers in other
    containers may share the hierarchy or /tmp): elsewhere, never assumed gone."""
    return namespace == pid_namespace() and not pid_alive(int(pid))
