"""The worker cgroup, on this machine's real hierarchies (v2 and v1 each where available)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from perfbench.isolation.cgroup import create_worker_cgroup


def _cgroup_or_skip(version):
    cg, why = create_worker_cgroup("test", versions=(version,))
    if cg is None:
        pytest.skip(f"no writable cgroup {version} here: {why}")
    return cg


# A process that joins the cgroup first, then double-forks a setsid'ed CPU burner and sleeps.
ESCAPER = r'''
import os, sys, time
for f in sys.argv[1:]:
    open(f, "w").write(str(os.getpid()))
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            pass
    os._exit(0)
time.sleep(60)
'''


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_freeze_account_and_kill_everything_forked(version):
    cg = _cgroup_or_skip(version)
    try:
        proc = subprocess.Popen([sys.executable, "-c", ESCAPER, *cg.procs_files])
        deadline = time.monotonic() + 10
        while len(cg.pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(cg.pids()) >= 2, cg.pids()      # the sleeper and the setsid'ed burner
        time.sleep(0.3)
        burned = cg.cpu_seconds()
        assert burned > 0.05                        # accounted here, not by session
        cg.freeze()
        a = cg.cpu_seconds()
        time.sleep(0.3)
        assert cg.cpu_seconds() - a < 0.01          # frozen: not one process runs
        cg.thaw()
        time.sleep(0.2)
        assert cg.cpu_seconds() - a > 0.05          # running again
        cg.kill()
        assert cg.pids() == []                      # the double-forked burner too
        proc.wait(timeout=5)
    finally:
        for pid in cg.pids():   # never leave a burner behind, even when kill() is what failed
            os.kill(pid, signal.SIGKILL)
        cg.remove()


def test_missing_hierarchy_says_why():
    cg, why = create_worker_cgroup("test", versions=())
    assert cg is None and why
