"""The sandbox around an untrusted worker: how its command line is wrapped, and what it reports.

Layers (docs/security.md says which attack each one stops):
1. its own cgroup (cgroup.py), joined before the worker's interpreter (or anything it starts) runs;
2. util-linux `unshare`: new PID (with its own /proc), network (loopback only, down), IPC, UTS
   and mount namespaces.  Chosen over bubblewrap because util-linux is on nearly every Linux and
   already here; bubblewrap does the same with more flags to get right;
3. in the new mount namespace, before the worker starts: every mount remounted read-only but a
   private directory the scorer made (TMPDIR) and a fresh /dev/shm, /sys/fs/cgroup covered (the
   cgroup cannot be left), the
   task's solution and reference hidden behind /dev/null, and the user's cache directory
   (compiled extensions) given a private copy-on-write overlay;
4. `setpriv`: no_new_privs, every capability dropped from all sets (uid 0 without capabilities
   cannot remount, unmount, ptrace, or write the read-only mounts).

Setting it up needs root (CAP_SYS_ADMIN); elsewhere `plan_sandbox` says which layers are
missing and the verdict carries that as a warning.  What was active is not assumed: the worker
probes its own process (`probe`) before any candidate code loads, and the verdict records that.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cgroup import WorkerCgroup, create_worker_cgroup

LAYERS = ("cgroup", "pid_ns", "net_ns", "mount_ns", "ipc_ns", "readonly_fs", "no_new_privs", "caps_dropped")

# sh: join the cgroup(s) named before "--", then exec the rest.  `$$` is this very process, so
# the worker and all it ever forks are in the cgroup from their first instruction on.
_JOIN = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"'

# sh, as root inside the new namespaces: join the cgroup, lock the filesystem down, exec the rest.
# Arguments: cgroup.procs files..., "--", private dir, cache dir to overlay (or "-"), files to
# hide..., "--", command...  The private dir (made by the scorer, removed after) is the one
# writable place.  Joining here, not before `unshare`, keeps unshare's own waiting parent out of
# the cgroup: freezing it mid-wait was seen to make it exit (util-linux 2.38).
_SETUP = r'''
set -e
while [ "$1" != "--" ]; do echo $$ > "$1"; shift; done
shift
mount --make-rprivate /
for m in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do
  mount -o remount,bind,ro "$m" 2>/dev/null || true
done
priv=$1; shift
mount --bind "$priv" "$priv"
mount -o remount,bind,rw "$priv"
if [ -d /dev/shm ]; then mount -t tmpfs -o mode=1777 tmpfs /dev/shm; fi
if [ -d /sys/fs/cgroup ]; then mount -t tmpfs -o ro,mode=755 tmpfs /sys/fs/cgroup; fi
if [ -d /dev/pts ]; then mount -t tmpfs -o ro,mode=755 tmpfs /dev/pts; fi
cache=$1; shift
if [ "$cache" != "-" ] && [ -d "$cache" ]; then
  mkdir -p "$priv/.overlay/upper" "$priv/.overlay/work"
  mount -t overlay overlay -o "lowerdir=$cache,upperdir=$priv/.overlay/upper,workdir=$priv/.overlay/work" "$cache"
fi
while [ "$1" != "--" ]; do
  if [ -e "$1" ]; then mount --bind /dev/null "$1"; fi
  shift
done
shift
exec "$@"
'''


@dataclass(frozen=True)
class SandboxPlan:
    """What the scorer will wrap a worker in, decided before it starts."""

    cgroup: WorkerCgroup | None
    namespaces: bool
    hide: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()       # one line per layer that cannot be had here, and why
    private_dir: str | None = None      # the worker's only writable directory (namespaces only)

    def wrap(self, argv: list[str]) -> list[str]:
        cmd = list(argv)
        if self.namespaces:
            cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            cmd = (["unshare", "--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts", "--mount",
                    "--mount-proc", "sh", "-c", _SETUP, "sh",
                    *(self.cgroup.procs_files if self.cgroup is not None else ()), "--",
                    self.private_dir, cache, *self.hide, "--",
                    "setpriv", "--no-new-privs", "--inh-caps=-all", "--ambient-caps=-all",
                    "--bounding-set=-all"] + cmd)
        elif self.cgroup is not None:
            cmd = ["sh", "-c", _JOIN, "sh", *self.cgroup.procs_files, "--"] + cmd
        return cmd

    def env(self, base: dict[str, str]) -> dict[str, str]:
        if not self.namespaces:
            return base
        # The worker's writable places are all under its private directory.
        return dict(base, TMPDIR=self.private_dir, TRITON_CACHE_DIR=os.path.join(self.private_dir, ".triton"),
                    PYTHONDONTWRITEBYTECODE="1", PERFBENCH_SANDBOX_PRIVATE=self.private_dir)

    def remove(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.private_dir:
            shutil.rmtree(self.private_dir, ignore_errors=True)


def plan_sandbox(label: str, *, untrusted: bool, hide: tuple[str, ...] = ()) -> SandboxPlan:
    """Every layer this machine allows for a worker (the namespaces only for untrusted ones)."""
    missing = []
    cgroup, why = create_worker_cgroup(label)
    if cgroup is None:
        missing.append(f"cgroup: {why}")
    namespaces = False
    if untrusted:
        tools = [t for t in ("unshare", "setpriv", "mount") if shutil.which(t) is None]
        if tools:
            missing.append(f"namespaces: {', '.join(tools)} not found (util-linux)")
        elif os.geteuid() != 0:
            missing.append("namespaces: the scorer is not root, so it cannot make mount namespaces "
                           "or drop a worker's privileges (run as root, or in a container that allows it)")
        elif not sys.platform.startswith("linux"):
            missing.append("namespaces: Linux only")
        else:
            namespaces = True
    private = tempfile.mkdtemp(prefix=f"perfbench-sandbox-{label}-") if namespaces else None
    return SandboxPlan(cgroup, namespaces, tuple(hide), tuple(missing), private)


@dataclass(frozen=True)
class Isolation:
    """The layers that were active around the candidate's worker, as recorded in the verdict."""

    layers: dict[str, bool] = field(default_factory=dict)
    uid: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return all(self.layers.get(name, False) for name in LAYERS)

    def to_dict(self) -> dict[str, Any]:
        return {**{name: bool(self.layers.get(name, False)) for name in LAYERS}, "uid": self.uid,
                "details": dict(self.details), "missing": list(self.missing)}


def isolation_from_probe(probe: dict[str, Any], plan: SandboxPlan) -> Isolation:
    """Combine what the scorer set up with what the worker saw of itself before loading code."""
    ns = plan.namespaces
    layers = {
        "cgroup": plan.cgroup is not None and plan.cgroup.name in {p.rsplit("/", 1)[-1] for p in probe.get("cgroups", [])},
        "pid_ns": ns and probe.get("pid") == 1,
        "net_ns": ns and probe.get("net_devices") == ["lo"],
        "mount_ns": ns and bool(probe.get("mount_ns_differs")),
        "ipc_ns": ns and bool(probe.get("ipc_ns_differs")),
        "readonly_fs": ns and probe.get("writable_mounts") == sorted(["/dev/shm", plan.private_dir or ""]),
        "no_new_privs": probe.get("no_new_privs") is True,
        "caps_dropped": probe.get("cap_eff") == 0 and probe.get("cap_bnd") == 0,
    }
    missing = list(plan.missing)   # layers that could not be set up, and why
    for name in LAYERS:
        planned = plan.cgroup is not None if name == "cgroup" else ns
        if planned and not layers[name]:
            missing.append(f"{name}: set up but not observed in the worker")
    details = {"cgroup": plan.cgroup.describe() if plan.cgroup else None, "probe": probe}
    return Isolation(layers, probe.get("uid"), details, tuple(missing))


def probe() -> dict[str, Any]:
    """What a worker sees of its own process.  Runs in the worker before any task code loads,
    so the candidate cannot have shaped it."""
    out: dict[str, Any] = {"pid": os.getpid(), "uid": os.getuid()}
    try:
        out["cgroups"] = sorted(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                                if line.count(":") >= 2)
    except OSError:
        out["cgroups"] = []
    try:
        status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
        out["no_new_privs"] = status.get("NoNewPrivs", "").strip() == "1"
        out["cap_eff"] = int(status.get("CapEff", "0").strip() or "0", 16)
        out["cap_bnd"] = int(status.get("CapBnd", "0").strip() or "0", 16)
    except OSError:
        pass
    try:   # /proc/self/net is this process's network namespace (/sys/class/net is the mounter's)
        lines = Path("/proc/self/net/dev").read_text().splitlines()[2:]
        out["net_devices"] = sorted(line.split(":", 1)[0].strip() for line in lines if ":" in line)
    except OSError:
        out["net_devices"] = None
    visible: dict[str, bool] = {}   # mount point -> writable, for the mount on top (later lines cover earlier)
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            parts = line.split()
            if len(parts) > 5:
                visible[parts[4]] = "rw" in parts[5].split(",")
    except OSError:
        pass
    writable = {m for m, rw in visible.items() if rw}
    out["writable_mounts"] = sorted(writable - {"/proc"} - _overlay_targets())
    for ns in ("mnt", "ipc"):
        try:
            out[f"{'mount' if ns == 'mnt' else ns}_ns_differs"] = os.readlink(f"/proc/self/ns/{ns}") != os.environ.get(
                f"PERFBENCH_SCORER_{ns.upper()}_NS")
        except OSError:
            pass
    return out


def _overlay_targets() -> set[str]:
    """Mounts the sandbox made writable on purpose: the private cache overlay."""
    out = set()
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            if right.startswith("overlay ") and "/.overlay/upper" in right:
                out.add(left.split()[4])
    except OSError:
        pass
    return out


def scorer_namespace_env() -> dict[str, str]:
    """The scorer's own namespace ids, for the worker's probe to compare with."""
    env = {}
    for ns in ("mnt", "ipc"):
        try:
            env[f"PERFBENCH_SCORER_{ns.upper()}_NS"] = os.readlink(f"/proc/self/ns/{ns}")
        except OSError:
            pass
    return env


def make_nondumpable() -> bool:
    """PR_SET_DUMPABLE 0 on the scorer: no core dumps, and /proc/<pid>/mem of the scorer is
    closed to processes of the same uid that lack CAP_SYS_PTRACE.  True if it took effect."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(4, 0, 0, 0, 0) == 0   # PR_SET_DUMPABLE
    except (OSError, AttributeError):
        return False
