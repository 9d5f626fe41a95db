"""Which sandbox layer keeps a worker from the GPU?  Runs `cuInit` (through ctypes, no torch)
under the full sandbox and under variants with one layer taken away, and prints a table.

    python scripts/sandbox_cuda_bisect.py [--out DIR]

Needs root and a CUDA device; changes nothing on the device.  Written after `cuInit` returned
304 (CUDA_ERROR_OPERATING_SYSTEM) in every sandboxed worker on a lent H200 while the same call
succeeded outside the sandbox.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PROBE = "import ctypes; print(ctypes.CDLL('libcuda.so.1').cuInit(0))"
NS_FLAGS = ["--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts", "--mount", "--mount-proc"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    from perfbench.isolation.processes.launch import _worker_env
    from perfbench.isolation.sandbox import plan as sandbox
    from perfbench.isolation.sandbox.worker_view import setpriv_user_args

    probe = [sys.executable, "-c", PROBE]
    results = {}

    def run(name, argv, plan=None):
        env = plan.env(_worker_env()) if plan is not None else _worker_env()
        try:
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
            results[name] = {"rc": p.returncode, "out": p.stdout.strip()[-200:], "err": p.stderr.strip()[-400:]}
        except subprocess.TimeoutExpired:
            results[name] = {"rc": None, "out": "", "err": "timeout"}
        print(f"{name:<34} rc={results[name]['rc']} cuInit={results[name]['out']!r} {results[name]['err'][-120:]}", flush=True)

    def unshare(flags, script, priv_args):
        return ["unshare", *flags, "sh", "-c", script, "sh", "setpriv", *priv_args, "--no-new-privs",
                "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"] + probe

    def unshare_root(flags, script):
        return ["unshare", *flags, "sh", "-c", script, "sh"] + probe

    run("no sandbox", probe)
    plan = sandbox.plan_sandbox("bisect", untrusted=True)
    try:
        run("full sandbox (as a worker)", plan.wrap(probe), plan)
    finally:
        plan.remove()
    simple = 'exec "$@"\n'
    priv = setpriv_user_args(plan.view) if plan.view is not None else []
    results["answered_2026_11_30"] = ("namespaces alone, each namespace alone, the view without the read-only "
                                      "remount: cuInit 0; the full sandbox, with or without the shm/cgroup "
                                      "covers, as root with caps, with /run /var /opt /tmp exposed: 304")
    if os.environ.get("BISECT_ALL"):
        run("namespaces, no fs view, setpriv", unshare(NS_FLAGS, simple, priv))
    run("namespaces, no fs view, root+caps", unshare_root(NS_FLAGS, simple))
    singles = {"pid": ["--pid", "--fork", "--kill-child", "--mount", "--mount-proc"], "net": ["--net"],
               "ipc": ["--ipc"], "uts": ["--uts"], "mount": ["--mount"]}
    for name, flags in singles.items():
        run(f"only {name} ns, root+caps", unshare_root(flags, simple))
    # The full view, with parts of the setup script taken out.
    for name, edit in (("no read-only remount", lambda s: s.replace(sandbox._READ_ONLY_ALL, "")),
                       ("no /dev/shm tmpfs", lambda s: s.replace("if [ -d /dev/shm ]; then mount -t tmpfs -o mode=1777 tmpfs /dev/shm; fi\n", "")),
                       ("no /sys/fs/cgroup cover", lambda s: s.replace("if [ -d /sys/fs/cgroup ]; then mount -t tmpfs -o ro,mode=755 tmpfs /sys/fs/cgroup; fi\n", ""))):
        plan = sandbox.plan_sandbox("bisect", untrusted=True)
        try:
            script = edit(plan.setup_script(plan.view))
            run(f"full view, {name}, setpriv", unshare(NS_FLAGS, script, priv), plan)
        finally:
            plan.remove()
    # Every mount read-only but the ones a pattern matches.
    for keep in ("/", "/proc", "/proc|/proc/*", "/dev|/dev/*", "/dev/nvidia*", "/sys|/sys/*", "/tmp*|/dev/shm"):
        loop = sandbox._READ_ONLY_ALL.replace('do\n', f'do\n  case "$m" in {keep}) continue;; esac\n', 1)
        plan = sandbox.plan_sandbox("bisect", untrusted=True)
        try:
            script = plan.setup_script(plan.view).replace(sandbox._READ_ONLY_ALL, loop)
            run(f"read-only but {keep}", unshare(NS_FLAGS, script, priv), plan)
        finally:
            plan.remove()
    plan = sandbox.plan_sandbox("bisect", untrusted=True)
    try:
        run("full view, root+caps", unshare_root(NS_FLAGS, plan.setup_script(plan.view)), plan)
    finally:
        plan.remove()
    # Extra paths a driver might want: /run, /var, /tmp writable.
    for extra in ("/run", "/var", "/opt", "/tmp"):
        if not os.path.exists(extra):
            continue
        plan = sandbox.plan_sandbox("bisect", untrusted=True, expose=(extra,))
        try:
            run(f"full sandbox + {extra} exposed", plan.wrap(probe), plan)
        finally:
            plan.remove()
    plan = sandbox.plan_sandbox("bisect", untrusted=True)
    results["mounts_host"] = Path("/proc/self/mountinfo").read_text()[-6000:]
    plan.remove()
    (out / "sandbox_bisect.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
