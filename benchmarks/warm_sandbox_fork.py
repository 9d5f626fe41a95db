"""Feasibility measurement, not product code: how long a process that already imported torch takes
to fork a child into a *fresh* worker sandbox (new namespaces, the worker's root view, an
unprivileged uid), against the ~2.5-3.2 s a new zygote takes to import torch on a Zen 3 host.

    sudo .venv/bin/python benchmarks/warm_sandbox_fork.py [N]      (default 5; root only)

Today each candidate's zygote is a new interpreter started inside its sandbox by util-linux
(`unshare ... sh -c SETUP setpriv ... python -m perfbench.isolation.zygote`).  A zygote that
outlives one candidate (docs/batch.md, "Not built") would instead fork, and the child would
enter the sandbox itself: unshare(2) the namespaces, run the same SETUP script (its mounts and
pivot_root act on the child's new mount namespace, which a child process of it shares), then
drop to the worker's uid the way setpriv does.  This script does exactly that N times and
prints the time to a child that has dropped its privileges, and the child's own probe
(sandbox.probe: uid, capabilities, no_new_privs, namespaces, root entries, writable mounts),
next to the probe of a worker started the usual way.  It measures; it does not decide whether
the in-process entry is as tight as setpriv's (that review is the design's first step).
"""
from __future__ import annotations

import ctypes
import json
import os
import statistics
import sys
import time

import torch  # the warm state a long-lived zygote would hold

from perfbench.isolation.hardening import _prctl
from perfbench.isolation.sandbox import isolation_from_probe, plan_sandbox, probe, scorer_namespace_env

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x4000000, 0x8000000, 0x20000000, 0x40000000
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24
LIBC = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def _drop_privileges(uid: int | None, gid: int | None) -> None:
    """setpriv --reuid --regid --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all."""
    last_cap = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last_cap + 1):
        if not _prctl(PR_CAPBSET_DROP, cap):
            raise OSError(f"capbset drop {cap} failed")
    if uid is not None:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)   # from root without keepcaps: permitted/effective/ambient emptied
    # inheritable: capset(2) with v3 header and zeroed data
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(LIBC.syscall(126, header, data), "capset")   # SYS_capset on x86-64
    if not _prctl(PR_SET_NO_NEW_PRIVS, 1):
        raise OSError("no_new_privs failed")


def _enter(plan, write_fd: int) -> None:
    """In the forked child: namespaces, then (as PID 1 of the new one) the view, then the uid."""
    _check(LIBC.unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID), "unshare")
    pid = os.fork()   # the new PID namespace takes the next child
    if pid:
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status))
    if plan.cgroup is not None:
        plan.cgroup.adopt(0)   # 0: the writing process, this very one
    script = "mount --make-rprivate /\nmount -t proc proc /proc\n" + plan.setup_script(plan.view).replace(
        'exec "$@"\n', "")
    # The script's cgroup lines write the shell's own pid: harmless, it exits.
    rc = os.spawnvp(os.P_WAIT, "sh", ["sh", "-c", script])
    if rc != 0:
        raise RuntimeError(f"setup script exited {rc}")
    os.chdir(plan.private_dir)
    view = plan.view
    _drop_privileges(view.uid, view.gid)
    t = time.perf_counter()
    # the sets sandbox.probe does not read: setpriv leaves them all empty, and so must this
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
    caps = {k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "Seccomp")}
    os.write(write_fd, json.dumps({"t": t, "probe": probe(), "caps": caps}).encode())


def one(expose: tuple[str, ...]) -> tuple[float, dict, dict, dict]:
    plan = plan_sandbox("warmfork", untrusted=True, expose=expose)
    r, w = os.pipe()
    try:
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(r)
                _enter(plan, w)
                code = 0
            except BaseException as exc:  # noqa: BLE001
                print(f"child: {exc!r}", file=sys.stderr)
            finally:
                os._exit(code)
        os.close(w)
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
        os.waitpid(pid, 0)
        if not data:
            raise RuntimeError("the child reported nothing")
        doc = json.loads(data)
        # judged as a spawned worker's probe is, against the same plan
        return doc["t"] - t0, doc["probe"], isolation_from_probe(doc["probe"], plan).layers, doc["caps"]
    finally:
        os.close(r)
        plan.remove()


def main() -> None:
    if os.geteuid() != 0:
        sys.exit("warm_sandbox_fork: needs root (it makes namespaces and mounts)")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    os.environ.update(scorer_namespace_env())
    expose = (os.path.abspath("tests/fixtures/tiny_task"),)
    times, last, layers, caps = [], {}, {}, {}
    for _ in range(n):
        t, last, layers, caps = one(expose)
        times.append(t)
    print(f"torch {torch.__version__} imported once; fork into a fresh sandbox, to a child that dropped its privileges: "
          f"median {statistics.median(times) * 1e3:.0f} ms, range {min(times) * 1e3:.0f}-{max(times) * 1e3:.0f} ms (n={n})")
    print("layers, as the verdict would record them:", json.dumps(layers))
    print("capability sets (/proc/self/status):", json.dumps(caps))
    print("child's probe:", json.dumps({k: last.get(k) for k in (
        "pid", "uid", "uids", "no_new_privs", "cap_eff", "cap_bnd", "net_devices", "mount_ns_differs", "ipc_ns_differs",
        "pid_ns_differs", "root_entries", "writable_mounts", "cgroups")}))


if __name__ == "__main__":
    main()
