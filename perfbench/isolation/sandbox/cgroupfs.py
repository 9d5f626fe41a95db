"""The cgroup file system as the scorer reads and writes it: where the hierarchies are mounted,
this process's own cgroup in each, the files it writes, the kernel's OOM-kill counter, and the
memory limit a worker gets.  (cgroup.py builds a worker's cgroup out of these.)"""
from __future__ import annotations

import os
from pathlib import Path

# A worker may use this share of the memory the scorer may (the host's, or its own cgroup's
# limit where lower): the scorer, the other side and the host keep the rest (#39: a candidate
# held 20 GB in memfds on a 24 GB host and squeezed the baseline's page cache).
MEMORY_SHARE = 0.5


def mounts() -> list[tuple[str, str, str]]:
    try:
        with open("/proc/self/mounts") as f:
            return [(p[1], p[2], p[3]) for p in (line.split() for line in f) if len(p) >= 4]
    except OSError:
        return []


def own_v2_path() -> str:
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                if line.startswith("0::"):
                    return line.strip()[3:] or "/"
    except OSError:
        pass
    return "/"


def own_v1_path(controller: str) -> str:
    """This process's cgroup in the v1 hierarchy that has `controller`."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controller in controllers.split(","):
                    return path or "/"
    except (OSError, ValueError):
        pass
    return "/"


def read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def worker_memory_max(v1_memory: str | None = None, v2_mount: str | None = None) -> int:
    """The memory limit of one worker: MEMORY_SHARE of what this scorer may use."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    own = [read_int(Path(v1_memory) / own_v1_path("memory").lstrip("/") / "memory.limit_in_bytes")
           if v1_memory else None,
           read_int(Path(v2_mount) / own_v2_path().lstrip("/") / "memory.max") if v2_mount else None]
    return int(MEMORY_SHARE * min([total] + [x for x in own if x]))


def oom_kill_count(path: Path) -> int:
    """The `oom_kill` count of a v2 memory.events or v1 memory.oom_control file (0 if none)."""
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)
