"""Entering a worker's sandbox from inside a running process: what `unshare`, the setup script
and `setpriv` do around a spawned interpreter (plan.py, `SandboxPlan.wrap`), done by a child
of the warm parent (warm_parent.py) that has already imported torch.

The steps, in the spawned path's order:
1. `enter_namespaces`: unshare(2) the mount, UTS, IPC, network and PID namespaces, then fork:
   the child is PID 1 of the new PID namespace (as `unshare --fork`); the parent stays behind,
   root in the old PID namespace, holds no fd, waits and leaves with the child's status (as
   `unshare` does); the child dies with it (`--kill-child`: PR_SET_PDEATHSIG).
2. `join_cgroup`: the child, not the waiting parent, joins the cgroup (sandbox.setup_script).
3. `build_view`: the same shell the spawned path runs (`SandboxPlan.view_script`): its mounts
   and pivot_root act on the new mount namespace, which the child shares with it.
4. `drop_privileges`: as `setpriv --reuid --regid --clear-groups --no-new-privs --inh-caps=-all
   --ambient-caps=-all --bounding-set=-all`; then `verify_dropped` reads the process's own
   /proc status and refuses to go on unless every capability set is empty, no_new_privs is set
   and every uid and gid is the worker's.  setpriv's exec of a fresh interpreter is what drops
   the effective set on the spawned path; here capset(2) does, and the check proves it.

Every failure raises `SandboxEntryError`; the caller exits without running anything else.
"""
from __future__ import annotations

import ctypes
import os
import platform
import select
import signal
import subprocess
from pathlib import Path

from ...system import host
from ...system.host import PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, PR_CAPBSET_DROP, PR_GET_SECUREBITS, PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
_CAPSET_SYSCALL = {"x86_64": 126, "aarch64": 91}   # capset(2); Python has no binding
_CAPABILITY_V3 = 0x20080522
CAP_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


class SandboxEntryError(RuntimeError):
    """A layer could not be entered, or was not in effect when checked."""


def unsupported() -> str | None:
    """Why this machine cannot enter a sandbox in process (None: it can)."""
    if not hasattr(os, "pidfd_open"):
        return "needs Linux (pidfd_open)"
    if platform.machine() not in _CAPSET_SYSCALL:
        return f"capset(2)'s number is not known on {platform.machine()}"
    return None


def _libc() -> ctypes.CDLL:
    lib = host.libc()
    if lib is None:
        raise SandboxEntryError("no C library to call (dlopen(NULL) failed)")
    return lib


def _call(rc: int, what: str) -> None:
    if rc != 0:
        raise SandboxEntryError(f"{what}: {os.strerror(host.errno())}")


_prctl = host.prctl


def enter_namespaces() -> None:
    """Returns in a new PID namespace's PID 1, in new mount, UTS, IPC and network namespaces.
    The process that called it never returns: it waits for that PID 1 and exits with its
    status."""
    _call(_libc().unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID), "unshare")
    alive_r, alive_w = os.pipe()   # the waiter holds the write end: EOF in the child once it is gone
    pid = os.fork()   # the new PID namespace's first process
    if pid:
        code = 1
        try:
            os.closerange(0, alive_w)   # it keeps nothing a sandboxed process could reach through it
            os.closerange(alive_w + 1, 65536)
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
        finally:
            os._exit(code if code >= 0 else 128 - code)
    os.close(alive_w)
    # as `unshare --kill-child`: gone with the waiting parent, whoever kills it
    _call(_prctl(PR_SET_PDEATHSIG, signal.SIGKILL), "PR_SET_PDEATHSIG")
    gone = select.select([alive_r], [], [], 0)[0]   # the waiter died before the line above
    os.close(alive_r)
    if gone or os.getpid() != 1:
        raise SandboxEntryError("the namespace's waiting parent is gone")


def join_cgroup(procs_files: list[str]) -> None:
    """Move this process (0: the writer) into the cgroup, in every hierarchy it has."""
    for f in procs_files:
        try:
            Path(f).write_text("0")
        except OSError as exc:
            raise SandboxEntryError(f"joining the cgroup ({f}): {exc}") from None


def build_view(view_script: str) -> None:
    """Run the spawned path's view script, after a /proc of the new PID namespace (as `unshare
    --mount-proc`)."""
    script = "set -e\nmount --make-rprivate /\nmount -t proc -o nosuid,noexec,nodev proc /proc\n" + view_script
    run = subprocess.run(["sh", "-c", script], stdin=subprocess.DEVNULL, check=False)
    if run.returncode != 0:
        raise SandboxEntryError(f"the sandbox's view script exited {run.returncode}")


def drop_privileges(uid: int | None, gid: int | None) -> None:
    """setpriv's drop, in process: bounding set emptied, groups cleared, uid and gid switched
    (when there is one to switch to), every capability set zeroed, no_new_privs."""
    if _prctl(PR_GET_SECUREBITS) != 0:   # keep-caps and friends would let caps survive setresuid
        raise SandboxEntryError("securebits are set: capabilities could survive the uid switch")
    last_cap = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last_cap + 1):
        _call(_prctl(PR_CAPBSET_DROP, cap), f"dropping capability {cap} from the bounding set")
    if uid is not None and gid is not None:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    _call(_prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL), "clearing the ambient set")
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_V3, 0)
    data = (ctypes.c_uint32 * 6)()   # effective, permitted, inheritable: all zero, both words
    _call(_libc().syscall(_CAPSET_SYSCALL[platform.machine()], header, data), "capset")
    _call(_prctl(PR_SET_NO_NEW_PRIVS, 1), "PR_SET_NO_NEW_PRIVS")


def verify_dropped(uid: int | None, gid: int | None) -> dict[str, str]:
    """This process's credentials as the kernel reports them; raises unless the drop holds."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    got = {k: status.get(k, "").strip() for k in (*CAP_SETS, "NoNewPrivs", "Uid", "Gid", "Groups")}
    wrong = [k for k in CAP_SETS if int(got[k] or "1", 16) != 0]
    if got["NoNewPrivs"] != "1":
        wrong.append("NoNewPrivs")
    if uid is not None and gid is not None:
        wrong += [k for k, want in (("Uid", uid), ("Gid", gid)) if set(got[k].split()) != {str(want)}]
        if got["Groups"]:
            wrong.append("Groups")
    if wrong:
        raise SandboxEntryError(f"privileges not dropped: {', '.join(f'{k}={got[k]!r}' for k in wrong)}")
    return got
