"""A worker's own cgroup: CPU accounted there, frozen on demand, killed as a whole.

Everything a worker starts, double-forked and `setsid` helpers included, stays in the cgroup it
was started in (leaving needs write access to the cgroup filesystem, which the sandbox does not
give).  So the scorer can stop all of it (`freeze`) while the other side is timed, read the CPU
it used, and kill every process in it at the end, whatever it forked.

Two hierarchies are supported, v2 preferred:
- cgroup v2 (any mounted `cgroup2`, e.g. /sys/fs/cgroup or the hybrid /sys/fs/cgroup/unified):
  `cgroup.freeze`, `cgroup.events`, `cpu.stat`, `cgroup.kill` are core files, no controller needed;
- cgroup v1: the `freezer`, `cpuacct` and (optional) `pids` controllers, one directory in each.

Every worker's cgroup also limits its tasks (`PIDS_MAX`) and its memory (`worker_memory_max()`:
anonymous memory, memfds, tmpfs and page cache all count), with v2's controllers or, where the
v2 tree has none (a hybrid host), v1 directories the worker joins as well.  A limit that cannot
be set is named in `pids_missing` / `memory_missing`, and so in the verdict's missing layers.
The v1 memory directory is made under the scorer's own memory cgroup, so a worker's memory
counts against whatever limit the scorer's container has, too.

When the task pins its cores, the cgroup also gets a cpuset with exactly those cores (v2
`cpuset.cpus` where the controller is enabled for it, else the v1 `cpuset` controller beside
either hierarchy): the worker may change its own affinity, but never to a core outside the set,
so it cannot move to a less loaded core than the other side's.  The cpuset may be created wide
(`hold_later`) and narrowed once the worker's interpreter is up (`hold_cpus`): two workers pinned
to one core would import torch one after the other, seconds per score spent before any
untrusted code has loaded.

A scorer killed with SIGKILL cannot remove its cgroups; the next one removes every perfbench
cgroup whose scorer (the pid namespace and pid in its name) is gone, killing what is left in it.

Creating one needs write access to the hierarchy (root, or a delegated subtree); where that is
missing `create_worker_cgroup` says why and the caller records the layer as absent.
"""
from __future__ import annotations

import re
import secrets
import time
from pathlib import Path

from ...system.procfs import owner_gone, owner_tag
from .cgroupfs import mounts, oom_kill_count, own_v1_path, own_v2_path, read_int, worker_memory_max, write
from .orphan_guard import empty_cgroup, guard, remove_cgroup

_FREEZE_TIMEOUT_S = 5.0
PIDS_MAX = 4096   # v1 pids controller: a fork bomb stops here
# perfbench-<label>-<scorer's pid namespace>-<scorer pid>-<token>: a pid is only looked up in
# the namespace it belongs to (scorers in other containers may share the hierarchy).
_NAME = re.compile(r"^perfbench-.+-(\d+)-(\d+)-[0-9a-f]{8}$")


class CgroupError(RuntimeError):
    """The cgroup could not be set up or did not do what it was told."""


class WorkerCgroup:
    """One cgroup (v2: one directory; v1: one directory per controller) for one worker."""

    def __init__(self, kind: str, dirs: dict[str, Path], cpus: tuple[int, ...] | None = None,
                 cpuset_missing: str = ""):
        self.kind = kind            # "v2" | "v1"
        self._dirs = dirs           # v2: {"": dir, "cpuset": v1 dir?}; v1: {"freezer", "cpuacct", "pids"?, "cpuset"?}
        self.cpus = cpus            # the cores its cpuset holds it to (None: no cpuset)
        self.cpuset_missing = cpuset_missing   # why there is no cpuset though cores were asked for
        self._cpuset_file: Path | None = None  # where `hold_cpus` writes them
        self.pids_missing = ""      # why no pids limit holds its processes (a fork bomb stops at PIDS_MAX)
        self.memory_missing = ""    # why no memory limit holds them
        self._memory_files: tuple[Path, Path] | None = None   # (its limit, its OOM kill counter)
        self._swap_file: Path | None = None   # v2: memory.swap.max; v1: memory.memsw.limit_in_bytes

    @property
    def pids_max(self) -> int | None:
        """The kernel's limit on this cgroup's tasks, as its pids controller reads it."""
        d = self._dirs.get("pids", self._dirs.get(""))
        try:
            return int((d / "pids.max").read_text())
        except (OSError, ValueError, TypeError):
            return None

    @property
    def memory_max(self) -> int | None:
        """The kernel's memory limit on this cgroup, as its memory controller reads it."""
        return None if self._memory_files is None else read_int(self._memory_files[0])

    @property
    def swap_max(self) -> int | None:
        """The swap this cgroup may use beyond `memory_max`, as the kernel reads it; None where the
        kernel does not count swap here (then the memory limit holds only what stays resident)."""
        if self._swap_file is None or self.memory_max is None:
            return None
        limit = read_int(self._swap_file)
        if limit is None or self._swap_file.name == "memory.swap.max":
            return limit
        return limit - self.memory_max   # v1's memsw counts memory and swap together

    def oom_kills(self) -> int:
        """Processes of this cgroup the kernel killed for going over its memory limit."""
        return 0 if self._memory_files is None else oom_kill_count(self._memory_files[1])

    def hold_cpus(self) -> None:
        """Narrow the cpuset to `cpus`: the kernel moves every thread in the cgroup there."""
        if self._cpuset_file is not None and self.cpus is not None:
            write(self._cpuset_file, _cpus_spec(self.cpus))

    @property
    def procs_files(self) -> list[str]:
        """Files a process writes its pid into to join (all of them, before it runs anything)."""
        return [str(d / "cgroup.procs") for d in self._dirs.values()]

    def adopt(self, pid: int) -> None:
        """Move process `pid`, every thread of it, into this cgroup (a worker forked elsewhere)."""
        for f in self.procs_files:
            write(Path(f), str(pid))

    @property
    def name(self) -> str:
        """The directory name (the same in every v1 controller)."""
        return next(iter(self._dirs.values())).name

    def describe(self) -> str:
        cpuset = f", cpuset {','.join(map(str, self.cpus))}" if self.cpus is not None else ""
        memory = f", memory {self.memory_max / 2**30:.1f} GiB" if self.memory_max else ""
        memory += ", no swap" if memory and self.swap_max == 0 else ""
        return f"{self.kind}:{next(iter(self._dirs.values()))}{cpuset}{memory}"

    def pids(self) -> list[int]:
        d = next(iter(self._dirs.values()))   # every controller's directory holds the same processes
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
            write(self._dirs[""] / "cgroup.freeze", "1")
            self._wait(lambda: "frozen 1" in (self._dirs[""] / "cgroup.events").read_text())
        else:
            write(self._dirs["freezer"] / "freezer.state", "FROZEN")
            self._wait(lambda: (self._dirs["freezer"] / "freezer.state").read_text().strip() == "FROZEN")

    def thaw(self) -> None:
        if self.kind == "v2":
            write(self._dirs[""] / "cgroup.freeze", "0")
        elif "freezer" in self._dirs:   # (a stale cgroup swept in another v1 controller has none)
            write(self._dirs["freezer"] / "freezer.state", "THAWED")

    @staticmethod
    def _wait(done) -> None:
        deadline = time.monotonic() + _FREEZE_TIMEOUT_S
        while not done():
            if time.monotonic() > deadline:
                raise CgroupError("the cgroup did not freeze in time")
            time.sleep(0.0001)

    def kill(self) -> None:
        """SIGKILL every process in the cgroup (thawed first: a frozen v1 task only dies once
        thawed) and wait until it is empty."""
        empty_cgroup(self._dirs.values())

    def remove(self) -> None:
        remove_cgroup(self._dirs.values())


def _new_name(label: str) -> str:
    return f"perfbench-{label}-{owner_tag()}-{secrets.token_hex(4)}"


def _make(d: Path) -> None:
    """A perfbench cgroup directory, watched by this scorer's orphan guard from here on."""
    d.mkdir()
    guard().watch_cgroup(d)


def _cpus_spec(cpus: tuple[int, ...]) -> str:
    return ",".join(map(str, cpus))


def _create_v2(mount: str, label: str, cpus: tuple[int, ...] | None, v1_cpuset: str | None,
               v1_pids: str | None = None, v1_memory: str | None = None) -> WorkerCgroup:
    # The cpuset is created as wide as the parent's; create_worker_cgroup narrows it (hold_cpus).
    parent = Path(mount) / own_v2_path().lstrip("/")
    sweep_stale(parent)
    d = parent / _new_name(label)
    _make(d)
    if not (d / "cgroup.freeze").exists():
        d.rmdir()
        raise CgroupError(f"{parent} has no cgroup.freeze (kernel older than 5.2?)")
    cg = WorkerCgroup("v2", {"": d})
    _limit_pids_v2(cg, d, v1_pids)
    _limit_memory(cg, d, v1_memory, mount)
    if cpus is not None:
        try:
            if "cpuset" in (d / "cgroup.controllers").read_text().split():
                cg._cpuset_file = d / "cpuset.cpus"   # empty: the parent's cores
                cg.cpus = cpus
            elif v1_cpuset is not None:
                cg._dirs["cpuset"] = _create_v1_cpuset(Path(v1_cpuset), d.name)
                cg._cpuset_file = cg._dirs["cpuset"] / "cpuset.cpus"
                cg.cpus = cpus
            else:
                cg.cpuset_missing = (f"no cpuset controller for {parent} (v2: not in cgroup.controllers; "
                                     "no v1 cpuset mounted)")
        except OSError as exc:
            cg.cpuset_missing = f"cpuset: {exc}"
    return cg


def _limit_pids_v2(cg: WorkerCgroup, d: Path, v1_pids: str | None) -> None:
    """PIDS_MAX on a v2 cgroup: its own pids controller, or, on a hybrid host whose v2 tree has
    no controllers, a v1 pids directory the worker joins as well (as its v1 cpuset).  Without
    either, `pids_missing` says so (#39: a candidate exhausted the host's pid space)."""
    try:
        if "pids" in (d / "cgroup.controllers").read_text().split():
            write(d / "pids.max", str(PIDS_MAX))
        elif v1_pids is not None:
            sweep_stale(Path(v1_pids))
            own = Path(v1_pids) / d.name
            _make(own)
            cg._dirs["pids"] = own
            write(own / "pids.max", str(PIDS_MAX))
        else:
            cg.pids_missing = "pids: no pids controller (v2: not in cgroup.controllers; no v1 pids mounted)"
    except OSError as exc:
        cg.pids_missing = f"pids: {exc}"


def _limit_memory(cg: WorkerCgroup, v2_dir: Path | None, v1_memory: str | None, v2_mount: str | None = None) -> None:
    """worker_memory_max() on the cgroup, swap included where the kernel counts it: v2's memory
    controller, or a v1 memory directory under the scorer's own (which the worker joins as well).
    Without either, `memory_missing` says so."""
    limit = worker_memory_max(v1_memory, v2_mount)
    try:
        if v2_dir is not None and "memory" in (v2_dir / "cgroup.controllers").read_text().split():
            write(v2_dir / "memory.max", str(limit))
            if (v2_dir / "memory.swap.max").exists():
                write(v2_dir / "memory.swap.max", "0")
                cg._swap_file = v2_dir / "memory.swap.max"
            cg._memory_files = (v2_dir / "memory.max", v2_dir / "memory.events")
        elif v1_memory is not None:
            parent = Path(v1_memory) / own_v1_path("memory").lstrip("/")
            sweep_stale(parent)
            own = parent / cg.name
            _make(own)
            cg._dirs["memory"] = own
            write(own / "memory.limit_in_bytes", str(limit))
            if (own / "memory.memsw.limit_in_bytes").exists():   # memory + swap: no more than memory
                write(own / "memory.memsw.limit_in_bytes", str(limit))
                cg._swap_file = own / "memory.memsw.limit_in_bytes"
            cg._memory_files = (own / "memory.limit_in_bytes", own / "memory.oom_control")
        else:
            cg.memory_missing = "memory: no memory controller (v2: not in cgroup.controllers; no v1 memory mounted)"
    except OSError as exc:
        cg.memory_missing = f"memory: {exc}"


def _create_v1_cpuset(root: Path, name: str) -> Path:
    """A v1 cpuset directory with its parent's cores and mems (v1 needs both before a join)."""
    sweep_stale(root)
    d = root / name
    _make(d)
    try:
        write(d / "cpuset.mems", (root / "cpuset.mems").read_text().strip())
        write(d / "cpuset.cpus", (root / "cpuset.cpus").read_text().strip())
    except OSError:
        d.rmdir()
        raise
    return d


def _create_v1(roots: dict[str, str], label: str, cpus: tuple[int, ...] | None) -> WorkerCgroup:
    name = _new_name(label)
    dirs: dict[str, Path] = {}
    try:
        for ctl in ("freezer", "cpuacct", "pids"):
            if ctl in roots:
                sweep_stale(Path(roots[ctl]))
                dirs[ctl] = Path(roots[ctl]) / name
                _make(dirs[ctl])
        if "pids" in dirs:
            write(dirs["pids"] / "pids.max", str(PIDS_MAX))
    except OSError:
        for d in dirs.values():
            try:
                d.rmdir()
            except OSError:
                pass
        raise
    cg = WorkerCgroup("v1", dirs)
    if "pids" not in dirs:
        cg.pids_missing = "pids: no v1 pids controller mounted"
    _limit_memory(cg, None, roots.get("memory"))
    if cpus is not None:
        if "cpuset" not in roots:
            cg.cpuset_missing = "no v1 cpuset controller is mounted"
        else:
            try:
                dirs["cpuset"] = _create_v1_cpuset(Path(roots["cpuset"]), name)
                cg._cpuset_file = dirs["cpuset"] / "cpuset.cpus"
                cg.cpus = cpus
            except OSError as exc:
                cg.cpuset_missing = f"cpuset: {exc}"
    return cg


def sweep_stale(parent: Path) -> list[str]:
    """Remove the perfbench cgroups under `parent` whose scorer is gone (killed before it could
    clean up), killing anything still in them.  Returns their names."""
    removed = []
    try:
        children = [d for d in parent.iterdir() if d.is_dir() and _NAME.match(d.name)]
    except OSError:
        return removed
    for d in children:
        if owner_gone(*_NAME.match(d.name).groups()):
            v2, freezer = (d / "cgroup.freeze").exists(), (d / "freezer.state").exists()
            WorkerCgroup("v2" if v2 else "v1", {"" if v2 else "freezer" if freezer else parent.name: d}).remove()
            if not d.exists():
                removed.append(d.name)
    return removed


def create_worker_cgroup(label: str, versions: tuple[str, ...] = ("v2", "v1"),
                        cpus: tuple[int, ...] | None = None, hold_later: bool = False) -> tuple[WorkerCgroup | None, str]:
    """A fresh cgroup for one worker, or (None, why not).  `versions`: which hierarchies to try,
    in order (tests pin one).  `cpus`: the cores its cpuset holds it to (`cpuset_missing` says
    why when none could be made); with `hold_later` only once the caller calls `hold_cpus()`."""
    cg, why = _create(label, versions, cpus)
    if cg is not None and not hold_later:
        try:
            cg.hold_cpus()
        except OSError as exc:
            cg.cpus, cg.cpuset_missing = None, f"cpuset: {exc}"
    return cg, why


def _create(label: str, versions: tuple[str, ...], cpus: tuple[int, ...] | None) -> tuple[WorkerCgroup | None, str]:
    mounted = mounts()
    v2 = [m for m, fstype, _ in mounted if fstype == "cgroup2" and "v2" in versions]
    v1: dict[str, str] = {}
    for m, fstype, opts in mounted:
        if fstype == "cgroup":
            for ctl in ("freezer", "cpuacct", "pids", "cpuset", "memory"):
                if ctl in opts.split(",") and ("v1" in versions or ctl in ("cpuset", "pids", "memory")):
                    v1.setdefault(ctl, m)
    errors = []
    for mount in v2:
        try:
            return _create_v2(mount, label, cpus, v1.get("cpuset"), v1.get("pids"), v1.get("memory")), ""
        except (OSError, CgroupError) as exc:
            errors.append(f"cgroup v2 at {mount}: {exc}")
    if "freezer" in v1 and "cpuacct" in v1:
        try:
            return _create_v1(v1, label, cpus), ""
        except OSError as exc:
            errors.append(f"cgroup v1: {exc}")
    if not v2 and not v1:
        errors.append("no cgroup hierarchy is mounted")
    elif not errors:
        errors.append("cgroup v1 without the freezer and cpuacct controllers")
    return None, "; ".join(errors)
