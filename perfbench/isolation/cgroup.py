"""A worker's own cgroup: CPU accounted there, frozen on demand, killed as a whole.

Everything a worker starts, double-forked and `setsid` helpers included, stays in the cgroup it
was started in (leaving needs write access to the cgroup filesystem, which the sandbox does not
give).  So the scorer can stop all of it (`freeze`) while the other side is timed, read the CPU
it used, and kill every process in it at the end, whatever it forked.

Two hierarchies are supported, v2 preferred:
- cgroup v2 (any mounted `cgroup2`, e.g. /sys/fs/cgroup or the hybrid /sys/fs/cgroup/unified):
  `cgroup.freeze`, `cgroup.events`, `cpu.stat`, `cgroup.kill` are core files, no controller needed;
- cgroup v1: the `freezer`, `cpuacct` and (optional) `pids` controllers, one directory in each.

Creating one needs write access to the hierarchy (root, or a delegated subtree); where that is
missing `create_worker_cgroup` says why and the caller records the layer as absent.
"""
from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

_FREEZE_TIMEOUT_S = 5.0
PIDS_MAX = 4096   # v1 pids controller: a fork bomb stops here


class CgroupError(RuntimeError):
    """The cgroup could not be set up or did not do what it was told."""


def _mounts() -> list[tuple[str, str, str]]:
    try:
        with open("/proc/self/mounts") as f:
            return [(p[1], p[2], p[3]) for p in (line.split() for line in f) if len(p) >= 4]
    except OSError:
        return []


def _own_v2_path() -> str:
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                if line.startswith("0::"):
                    return line.strip()[3:] or "/"
    except OSError:
        pass
    return "/"


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


class WorkerCgroup:
    """One cgroup (v2: one directory; v1: one directory per controller) for one worker."""

    def __init__(self, kind: str, dirs: dict[str, Path]):
        self.kind = kind            # "v2" | "v1"
        self._dirs = dirs           # v2: {"": dir}; v1: {"freezer": dir, "cpuacct": dir, "pids": dir?}

    @property
    def procs_files(self) -> list[str]:
        """Files a process writes its pid into to join (all of them, before it runs anything)."""
        return [str(d / "cgroup.procs") for d in self._dirs.values()]

    @property
    def name(self) -> str:
        """The directory name (the same in every v1 controller)."""
        return next(iter(self._dirs.values())).name

    def describe(self) -> str:
        return f"{self.kind}:{next(iter(self._dirs.values()))}"

    def pids(self) -> list[int]:
        d = self._dirs.get("", self._dirs.get("freezer"))
        try:
            return [int(x) for x in (d / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def cpu_seconds(self) -> float:
        """CPU (user + system) used by every process that ever ran in the cgroup."""
        if self.kind == "v2":
            for line in (self._dirs[""] / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) * 1e-6
            raise CgroupError("cpu.stat has no usage_usec")
        return int((self._dirs["cpuacct"] / "cpuacct.usage").read_text()) * 1e-9

    def freeze(self) -> None:
        """Stop every process in the cgroup; returns once the kernel reports them frozen."""
        if self.kind == "v2":
            _write(self._dirs[""] / "cgroup.freeze", "1")
            self._wait(lambda: "frozen 1" in (self._dirs[""] / "cgroup.events").read_text())
        else:
            _write(self._dirs["freezer"] / "freezer.state", "FROZEN")
            self._wait(lambda: (self._dirs["freezer"] / "freezer.state").read_text().strip() == "FROZEN")

    def thaw(self) -> None:
        if self.kind == "v2":
            _write(self._dirs[""] / "cgroup.freeze", "0")
        else:
            _write(self._dirs["freezer"] / "freezer.state", "THAWED")

    @staticmethod
    def _wait(done) -> None:
        deadline = time.monotonic() + _FREEZE_TIMEOUT_S
        while not done():
            if time.monotonic() > deadline:
                raise CgroupError("the cgroup did not freeze in time")
            time.sleep(0.0001)

    def kill(self) -> None:
        """SIGKILL every process in the cgroup and wait until it is empty."""
        deadline = time.monotonic() + 5.0
        try:
            self.thaw()   # v1: a frozen task only dies once thawed
        except OSError:
            pass
        if self.kind == "v2" and (self._dirs[""] / "cgroup.kill").exists():
            try:
                _write(self._dirs[""] / "cgroup.kill", "1")
            except OSError:
                pass
        while True:
            left = self.pids()
            if not left or time.monotonic() > deadline:
                return
            for pid in left:   # v1, or a v2 kernel without cgroup.kill: one by one until empty
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.005)

    def remove(self) -> None:
        self.kill()
        for d in self._dirs.values():
            for _ in range(200):   # the last exits are reaped asynchronously
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.005)


def _create_v2(mount: str, label: str) -> WorkerCgroup:
    parent = Path(mount) / _own_v2_path().lstrip("/")
    d = parent / f"perfbench-{label}-{os.getpid()}-{secrets.token_hex(4)}"
    d.mkdir()
    if not (d / "cgroup.freeze").exists():
        d.rmdir()
        raise CgroupError(f"{parent} has no cgroup.freeze (kernel older than 5.2?)")
    return WorkerCgroup("v2", {"": d})


def _create_v1(roots: dict[str, str], label: str) -> WorkerCgroup:
    name = f"perfbench-{label}-{os.getpid()}-{secrets.token_hex(4)}"
    dirs: dict[str, Path] = {}
    try:
        for ctl in ("freezer", "cpuacct", "pids"):
            if ctl in roots:
                dirs[ctl] = Path(roots[ctl]) / name
                dirs[ctl].mkdir()
        if "pids" in dirs:
            _write(dirs["pids"] / "pids.max", str(PIDS_MAX))
    except OSError:
        for d in dirs.values():
            try:
                d.rmdir()
            except OSError:
                pass
        raise
    return WorkerCgroup("v1", dirs)


def create_worker_cgroup(label: str, versions: tuple[str, ...] = ("v2", "v1")) -> tuple[WorkerCgroup | None, str]:
    """A fresh cgroup for one worker, or (None, why not).  `versions`: which hierarchies to try,
    in order (tests pin one)."""
    mounts = _mounts()
    v2 = [m for m, fstype, _ in mounts if fstype == "cgroup2" and "v2" in versions]
    v1: dict[str, str] = {}
    for m, fstype, opts in mounts:
        if fstype == "cgroup" and "v1" in versions:
            for ctl in ("freezer", "cpuacct", "pids"):
                if ctl in opts.split(","):
                    v1.setdefault(ctl, m)
    errors = []
    for mount in v2:
        try:
            return _create_v2(mount, label), ""
        except (OSError, CgroupError) as exc:
            errors.append(f"cgroup v2 at {mount}: {exc}")
    if "freezer" in v1 and "cpuacct" in v1:
        try:
            return _create_v1(v1, label), ""
        except OSError as exc:
            errors.append(f"cgroup v1: {exc}")
    if not v2 and not v1:
        errors.append("no cgroup hierarchy is mounted")
    elif not errors:
        errors.append("cgroup v1 without the freezer and cpuacct controllers")
    return None, "; ".join(errors)
