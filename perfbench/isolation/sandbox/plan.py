"""The sandbox around an untrusted worker: how its command line is wrapped, and what it reports.

Layers (docs/security.md says which attack each one stops):
1. its own cgroup (cgroup.py), joined before the worker's interpreter (or anything it starts)
   runs, with a cpuset of the task's cores when it pins them (both sides);
2. util-linux `unshare`: new PID (with its own /proc), network (loopback only, down), IPC, UTS
   and mount namespaces.  Chosen over bubblewrap because util-linux is on nearly every Linux and
   already here; bubblewrap does the same with more flags to get right;
3. in the new mount namespace, before the worker starts (worker_view.py): a new root (`pivot_root`
   into a tmpfs) holding only the system directories and the paths the worker needs; every
   mount remounted read-only but a private directory the scorer made (TMPDIR, the worker's cwd)
   and a fresh /dev/shm; /sys/fs/cgroup covered (the cgroup cannot be left); each extension
   build cache behind a private copy-on-write overlay; the task's solution and reference are not
   in the root (and covered, should an exposed directory hold them);
4. `setpriv`: an unprivileged uid where every path the worker needs is readable by others,
   no_new_privs, every capability dropped from all sets (even as uid 0, without capabilities it
   cannot remount, unmount, ptrace, or write the read-only mounts).

Setting it up needs root (CAP_SYS_ADMIN); elsewhere `plan_sandbox` says which layers are
missing and the verdict carries that as a warning.  What was active is not assumed: the worker
probes its own process (`probe`) before any candidate code loads, and the verdict records that.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...system.procfs import owner_gone, owner_tag
from .cgroup import WorkerCgroup, create_worker_cgroup
from .hardening import set_dumpable
from .worker_view import SHM_BYTES, WorkerView, plan_view, readable_copies, root_script, setpriv_user_args, under
from .orphan_guard import guard

LAYERS = ("cgroup", "cpuset", "pid_ns", "net_ns", "mount_ns", "ipc_ns", "minimal_root", "readonly_fs", "uid",
          "no_new_privs", "caps_dropped", "no_keyrings", "no_userfaultfd", "private_tmpfs")

# sh: join the cgroup(s) named before "--", then exec the rest.  `$$` is this very process, so
# the worker and all it ever forks are in the cgroup from their first instruction on.
_JOIN = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"'

# sh, as root in the new mount namespace: every mount read-only (each mount point's top mount)
# but the worker's own /proc: CUDA's cuInit fails (304, "OS call failed")
# with a read-only /proc (found on a lent H200 by bisecting the sandbox layers).  That /proc
# belongs to the worker's PID namespace; its system-wide writable entries are made read-only
# the way container runtimes do (runc's readonlyPaths).
_READ_ONLY_ALL = """for m in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do
  case "$m" in /proc) continue;; esac
  mount -o remount,bind,ro "$m" 2>/dev/null || true
done
for p in /proc/sys /proc/sysrq-trigger /proc/irq /proc/bus /proc/fs; do
  if [ -e "$p" ]; then mount --bind "$p" "$p" && mount -o remount,bind,ro "$p"; fi
done
"""


@dataclass(frozen=True)
class SandboxPlan:
    """What the scorer will wrap a worker in, decided before it starts."""

    cgroup: WorkerCgroup | None
    namespaces: bool
    hide: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()       # one line per layer that cannot be had here, and why
    private_dir: str | None = None      # the worker's only writable directory (namespaces only)
    view: WorkerView | None = None      # its filesystem view and uid (namespaces only)
    cpus: tuple[int, ...] | None = None  # the cores asked for (the cgroup's cpuset holds it there)
    shares_private_dir: bool = False     # a forked worker's: its zygote's, removed with the zygote

    def wrap(self, argv: list[str]) -> list[str]:
        cmd = list(argv)
        if self.namespaces:
            view = self.view or WorkerView((), ())
            cmd = (["unshare", "--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts", "--mount",
                    "--mount-proc", "sh", "-c", self.setup_script(view), "sh",
                    "setpriv", *setpriv_user_args(view), "--no-new-privs", "--inh-caps=-all",
                    "--ambient-caps=-all", "--bounding-set=-all"] + cmd)
        elif self.cgroup is not None:
            cmd = ["sh", "-c", _JOIN, "sh", *self.cgroup.procs_files, "--"] + cmd
        return cmd

    def setup_script(self, view: WorkerView) -> str:
        """sh, as root inside the new namespaces: join the cgroup, build the worker's root and move
        into it, lock it down, exec its arguments.  Joining here, not before `unshare`, keeps
        unshare's own waiting parent out of the cgroup: freezing it mid-wait was seen to make it
        exit (util-linux 2.38)."""
        q = shlex.quote
        procs = self.cgroup.procs_files if self.cgroup is not None else []
        return "".join(["set -e\n", *(f"echo $$ > {q(f)}\n" for f in procs), self.view_script(view), 'exec "$@"\n'])

    def view_script(self, view: WorkerView) -> str:
        """sh, as root in the new mount namespace: the worker's root, moved into and locked down,
        ending in its private directory (the part of `setup_script` a warm parent's child runs
        itself, warm_parent.py)."""
        q, priv = shlex.quote, self.private_dir or ""
        root = f"{priv}/.root"   # where the new root is built; the old one is let go before the exec
        pivot = q(_tool("pivot_root") or "pivot_root")
        return "".join([
            "mount --make-rprivate /\n",
            f"mkdir {q(root)}\n",
            root_script(view, root, priv),
            f"cd {q(root)}; mkdir .old; {pivot} . .old; cd /; umount -l /.old; rmdir /.old\n",
            _READ_ONLY_ALL,
            *(f"mount -o remount,bind,rw {q(p)}\n" for p in (priv, *view.caches)),
            f"if [ -d /dev/shm ]; then mount -t tmpfs -o size={SHM_BYTES},mode=1777 tmpfs /dev/shm; fi\n",
            "if [ -d /sys/fs/cgroup ]; then mount -t tmpfs -o ro,mode=755 tmpfs /sys/fs/cgroup; fi\n",
            "if [ -d /dev/pts ]; then mount -t tmpfs -o ro,mode=755 tmpfs /dev/pts; fi\n",
            # trusted files that an exposed directory holds after all (a task inside a sys.path entry)
            *(f"if [ -d {q(h)} ]; then mount -t tmpfs -o ro,mode=755 tmpfs {q(h)}; "
              f"elif [ -e {q(h)} ]; then mount --bind /dev/null {q(h)}; fi\n" for h in self.hide),
            f"cd {q(priv)}\n"])

    def env(self, base: dict[str, str]) -> dict[str, str]:
        if not self.namespaces:
            return base
        # The worker's writable places are all under its private directory.
        return dict(base, TMPDIR=self.private_dir, TRITON_CACHE_DIR=os.path.join(self.private_dir, ".triton"),
                    CUPY_CACHE_DIR=os.path.join(self.private_dir, ".cupy"), PYTHONDONTWRITEBYTECODE="1", PERFBENCH_SANDBOX_PRIVATE=self.private_dir)

    def remove(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.private_dir and not self.shares_private_dir:
            shutil.rmtree(self.private_dir, ignore_errors=True)


def _tool(name: str) -> str | None:
    """A util-linux program: pivot_root lives in sbin, often not on a user's PATH."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))


# perfbench-sandbox-<label>-<scorer's pid namespace>-<scorer pid>-<mkdtemp's 8 characters>
# A sandbox's private directory, or a worker's log directory: both named with their scorer's owner tag.
_PRIVATE_NAME = re.compile(r"^perfbench-(?:sandbox-.+|worker)-(\d+)-(\d+)-[a-z0-9_]{8}$")


def sweep_stale_private_dirs(parent: str) -> list[str]:
    """Remove the private and log directories under `parent` whose scorer is gone (killed before
    it could clean up; the overlay copies of the extension cache in them are megabytes).  Returns
    them."""
    removed = []
    try:
        names = [n for n in os.listdir(parent) if n.startswith(("perfbench-sandbox-", "perfbench-worker-"))]
    except OSError:
        return removed
    for name in names:
        m = _PRIVATE_NAME.match(name)
        if m and owner_gone(*m.groups()):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
            removed.append(name)
    return removed


def worker_log_dir() -> Path:
    """A fresh directory for a worker's (or a zygote's) log, in the temp directory, named with
    this scorer's owner tag so that a later scorer removes it should this one be killed first."""
    return Path(_owned_temp_dir("perfbench-worker", tempfile.gettempdir()))


def _owned_temp_dir(kind: str, parent: str) -> str:
    """A fresh directory `kind-<owner tag>-XXXXXXXX` under `parent`: those of scorers gone are
    swept first, and this one is told to the orphan guard, so that neither a killed scorer's
    guard nor, failing that, the next scorer leaves it behind."""
    sweep_stale_private_dirs(parent)
    d = tempfile.mkdtemp(prefix=f"{kind}-{owner_tag()}-", dir=parent)
    guard().watch_dir(d)
    return d


def plan_sandbox(label: str, *, untrusted: bool, hide: tuple[str, ...] = (), expose: tuple[str, ...] = (),
                 cpus: tuple[int, ...] | None = None) -> SandboxPlan:
    """Every layer this machine allows for a worker (the namespaces only for untrusted ones).
    `expose`: paths it must read besides the interpreter and perfbench (the task, the candidate);
    `cpus`: the cores its cpuset holds it to."""
    cgroup, why = create_worker_cgroup(label, cpus=cpus, hold_later=True)   # client.start holds it
    missing = _cgroup_missing(cgroup, why, cpus)
    namespaces = False
    if untrusted:
        tools = [t for t in ("unshare", "setpriv", "mount", "pivot_root") if _tool(t) is None]
        if tools:
            missing.append(f"namespaces: {', '.join(tools)} not found (util-linux)")
        elif os.geteuid() != 0:
            missing.append("namespaces: the scorer is not root, so it cannot make mount namespaces "
                           "or drop a worker's privileges (run as root, or in a container that allows it)")
        elif not sys.platform.startswith("linux"):
            missing.append("namespaces: Linux only")
        else:
            namespaces = True
    view = plan_view(tuple(expose)) if namespaces else None
    private = None
    if view is not None:   # never inside an exposed directory (a TMPDIR in the venv): its own mount
        tmp = os.path.realpath(tempfile.gettempdir())
        parent = "/tmp" if any(under(tmp, p) for p in view.expose) else tmp
        private = _owned_temp_dir(f"perfbench-sandbox-{label}", parent)
        if view.uid is None:   # a file of the caller's closed to others (a 0600 temp file): a copy
            copies = readable_copies(tuple(expose), private)
            if copies:
                view = plan_view(tuple(expose), copies=copies)
    if view is not None and view.uid is None:
        missing.append(f"uid: {view.why_not_uid}")
    return SandboxPlan(cgroup, namespaces, tuple(hide), tuple(missing), private, view, cpus)


def _cgroup_missing(cgroup: WorkerCgroup | None, why: str, cpus: tuple[int, ...] | None) -> list[str]:
    if cgroup is None:
        return [f"cgroup: {why}"] + (["cpuset: no cgroup"] if cpus is not None else [])
    return (([f"cpuset: {cgroup.cpuset_missing}"] if cpus is not None and cgroup.cpus is None else [])
            + ([cgroup.pids_missing] if cgroup.pids_missing else [])
            + ([cgroup.memory_missing] if cgroup.memory_missing else []))


def plan_forked(zygote: SandboxPlan, label: str, cpus: tuple[int, ...] | None) -> SandboxPlan:
    """A worker forked from a zygote that runs in `zygote`: the zygote's namespaces, view, uid
    and private directory, and a cgroup of its own (its CPU, freezing and killing are its own),
    holding `cpus` from the start."""
    if zygote.cgroup is None:   # none to be had here, or the caller switched the sandbox off
        return dataclasses.replace(zygote, cpus=cpus, shares_private_dir=True)
    cgroup, why = create_worker_cgroup(label, cpus=cpus)
    missing = [m for m in zygote.missing if not m.startswith(("cgroup:", "cpuset:", "pids:", "memory:"))]
    return dataclasses.replace(zygote, cgroup=cgroup, missing=tuple(missing + _cgroup_missing(cgroup, why, cpus)),
                               cpus=cpus, shares_private_dir=True)


@dataclass(frozen=True)
class Isolation:
    """The layers that were active around the candidate's worker, as recorded in the verdict."""

    layers: dict[str, bool | None] = field(default_factory=dict)   # None: does not apply (cpuset on CUDA)
    worker_uid: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return all(self.layers.get(name, False) is not False for name in LAYERS)

    def to_dict(self) -> dict[str, Any]:
        return {**{name: self.layers.get(name, False) for name in LAYERS}, "worker_uid": self.worker_uid,
                "details": dict(self.details), "missing": list(self.missing)}


def isolation_from_probe(probe: dict[str, Any], plan: SandboxPlan) -> Isolation:
    """Combine what the scorer set up with what the worker saw of itself before loading code."""
    ns = plan.namespaces
    cpus = plan.cgroup.cpus if plan.cgroup is not None else None   # what the cpuset holds (None: no cpuset)
    wanted_uid = plan.view.uid if ns and plan.view is not None else None
    uids = probe.get("uids") or [probe.get("uid")]
    layers: dict[str, bool | None] = {
        "cgroup": plan.cgroup is not None and plan.cgroup.name in {p.rsplit("/", 1)[-1] for p in probe.get("cgroups", [])},
        # the worker tried to widen its affinity to every core and could not leave the set
        "cpuset": None if plan.cpus is None else (
            cpus is not None and bool(probe.get("affinity_widened"))
            and set(probe.get("affinity_widened", [])) <= set(cpus)),
        "pid_ns": ns and bool(probe.get("pid_ns_differs")),
        "net_ns": ns and probe.get("net_devices") == ["lo"],
        "mount_ns": ns and bool(probe.get("mount_ns_differs")),
        "ipc_ns": ns and bool(probe.get("ipc_ns_differs")),
        # its `/` holds nothing but what the view put there (the scorer's / has home, opt, srv, ...)
        "minimal_root": ns and plan.view is not None and probe.get("root_entries") is not None
        and set(probe["root_entries"]) <= plan.view.top_level(plan.private_dir or ""),
        "readonly_fs": ns and probe.get("writable_mounts") == sorted(["/dev/shm", plan.private_dir or ""]),
        "uid": wanted_uid is not None and wanted_uid != 0 and all(u == wanted_uid for u in uids),
        "no_new_privs": probe.get("no_new_privs") is True,
        "caps_dropped": probe.get("cap_eff") == 0 and probe.get("cap_bnd") == 0,
        # add_key/request_key/keyctl refused (syscall_filter.py): the uid's keyring outlives
        # every namespace, so it was a channel between candidates
        "no_keyrings": probe.get("keyrings_denied") is True,
        # userfaultfd refused: a page registered with it blocks the scorer's reads of the
        # frozen worker's memory (the reads also have a deadline, arena.read_process_memory)
        "no_userfaultfd": probe.get("userfaultfd_denied") is True,
        # its private directory a size-bounded tmpfs: no disk, no writeback after the score
        "private_tmpfs": ns and probe.get("private_fs") == "tmpfs",
    }
    missing = list(plan.missing)   # layers that could not be set up, and why
    planned = {"cgroup": plan.cgroup is not None, "cpuset": cpus is not None, "uid": wanted_uid is not None}
    for name in LAYERS:
        if planned.get(name, ns) and layers[name] is False:
            missing.append(f"{name}: set up but not observed in the worker")
    details = {"cgroup": plan.cgroup.describe() if plan.cgroup else None, "probe": probe,
               "exposed": list(plan.view.expose) if plan.view else [],
               # files closed to other users, bound from a readable copy (worker_view.readable_copies)
               "readable_copies": [path for path, _ in plan.view.copies] if plan.view else []}
    return Isolation(layers, probe.get("uid"), details, tuple(missing))


def probe() -> dict[str, Any]:
    """What a worker sees of its own process.  Runs in the worker before any task code loads,
    so the candidate cannot have shaped it."""
    from .syscall_filter import keyrings_denied, userfaultfd_denied

    out: dict[str, Any] = {"pid": os.getpid(), "uid": os.getuid(), "keyrings_denied": keyrings_denied(),
                           "userfaultfd_denied": userfaultfd_denied()}
    try:
        out["root_entries"] = sorted(os.listdir("/"))
    except OSError:
        out["root_entries"] = None
    try:
        out["cgroups"] = sorted(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                                if line.count(":") >= 2)
    except OSError:
        out["cgroups"] = []
    try:
        status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
        out["uids"] = [int(x) for x in status.get("Uid", "").split()]   # real, effective, saved, filesystem
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
    try:   # try to leave the pinned cores: a cpuset keeps the worker inside whatever it asks
        pinned = os.sched_getaffinity(0)
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
        out["affinity_widened"] = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, pinned)
    except (OSError, AttributeError):
        pass
    visible: dict[str, bool] = {}   # mount point -> writable, for the mount on top (later lines cover earlier)
    fstypes: dict[str, str] = {}
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            parts = line.split()
            if len(parts) > 5:
                visible[parts[4]] = "rw" in parts[5].split(",")
                fstypes[parts[4]] = parts[parts.index("-") + 1] if "-" in parts[6:-1] else ""
    except OSError:
        pass
    out["private_fs"] = fstypes.get(os.environ.get("PERFBENCH_SANDBOX_PRIVATE", ""))
    writable = {m for m, rw in visible.items() if rw}
    out["writable_mounts"] = sorted(writable - {"/proc"} - _overlay_targets())
    for ns in ("mnt", "ipc", "pid"):
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
            if right.startswith("overlay ") and "/.overlay/" in right and "/upper," in right:
                out.add(left.split()[4])
    except OSError:
        pass
    return out


def scorer_namespace_env() -> dict[str, str]:
    """The scorer's own namespace ids, for the worker's probe to compare with."""
    env = {}
    for ns in ("mnt", "ipc", "pid"):
        try:
            env[f"PERFBENCH_SCORER_{ns.upper()}_NS"] = os.readlink(f"/proc/self/ns/{ns}")
        except OSError:
            pass
    return env


def make_nondumpable() -> bool:
    """PR_SET_DUMPABLE 0 on the scorer: no core dumps, and /proc/<pid>/mem of the scorer is
    closed to processes of the same uid that lack CAP_SYS_PTRACE.  True if it took effect."""
    return set_dumpable(0)
