"""The worker cgroup, on this machine's real hierarchies (v2 and v1 each where available)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from perfbench.isolation.sandbox.cgroup import create_worker_cgroup, sweep_stale


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


# Joins the cgroup, then tries to run on every core, as a candidate leaving a loaded core would.
WIDENER = r'''
import os, sys
for f in sys.argv[1:]:
    open(f, "w").write(str(os.getpid()))
os.sched_setaffinity(0, range(os.cpu_count()))
print(",".join(map(str, sorted(os.sched_getaffinity(0)))))
'''


def test_cpuset_keeps_a_worker_on_its_cores_whatever_affinity_it_asks_for():
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs a second core to move to")
    cg, why = create_worker_cgroup("test", cpus=(0,))
    if cg is None or cg.cpus is None:
        pytest.skip(f"no cpuset here: {why or cg.cpuset_missing}")
    try:
        out = subprocess.run([sys.executable, "-c", WIDENER, *cg.procs_files], capture_output=True, text=True,
                             timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "0"            # asked for every core, kept on core 0
        assert "cpuset 0" in cg.describe()
    finally:
        cg.remove()
    free = subprocess.run([sys.executable, "-c", WIDENER], capture_output=True, text=True, timeout=30)
    assert free.stdout.strip() != "0"               # without the cpuset the same request widens


def test_cgroups_left_by_a_killed_scorer_are_removed_with_what_is_in_them(tmp_path):
    cg = _cgroup_or_skip("v2")
    parent = next(iter(cg._dirs.values())).parent
    cg.remove()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()                                     # a scorer pid that is gone
    ns = "".join(c for c in os.readlink("/proc/self/ns/pid") if c.isdigit())
    stale = parent / f"perfbench-candidate-{ns}-{dead.pid}-deadbeef"
    live = parent / f"perfbench-candidate-{ns}-{os.getpid()}-0badcafe"
    elsewhere = parent / f"perfbench-candidate-1{ns}-{dead.pid}-0ddba11a"   # another pid namespace's
    stale.mkdir()
    live.mkdir()
    elsewhere.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (stale / "cgroup.procs").write_text(str(sleeper.pid))
        assert sweep_stale(parent) == [stale.name]
        assert not stale.exists() and live.exists()   # a running scorer's cgroup is left alone
        assert elsewhere.exists()                      # so is one whose pid means another process
        assert sleeper.wait(timeout=5) == -signal.SIGKILL
    finally:   # clean up even when the sweep is what failed
        sleeper.kill()
        sleeper.wait(timeout=5)
        for d in (stale, live, elsewhere):
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:   # the killed sleeper is reaped asynchronously
                    time.sleep(0.01)


def test_a_candidate_worker_that_will_not_freeze_is_rejected_not_a_crash():
    """The freeze timeout on the candidate's worker is a verdict (`candidate.unfreezable`); on
    the trusted baseline's it stays the scorer's error (#39)."""
    from types import SimpleNamespace

    from perfbench.core.errors import CandidateRejected
    from perfbench.isolation.processes.worker_client import WorkerClient
    from perfbench.isolation.sandbox.cgroup import CgroupError

    class Stuck:
        def freeze(self):
            raise CgroupError("the cgroup did not freeze in time")

    def client(untrusted: bool) -> WorkerClient:
        c = WorkerClient.__new__(WorkerClient)
        c.plan, c._frozen, c.untrusted, c.label = SimpleNamespace(cgroup=Stuck()), False, untrusted, "candidate"
        return c

    with pytest.raises(CandidateRejected) as err:
        client(True).freeze()
    assert err.value.reason == "candidate.unfreezable" and "did not freeze in time" in err.value.message
    with pytest.raises(CgroupError):
        client(False).freeze()


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_a_worker_cgroup_limits_its_tasks(version):
    """A fork bomb stops at PIDS_MAX: on a hybrid host (v2 without controllers) through a v1 pids
    directory the worker joins too (#39: a candidate exhausted the host's pid space)."""
    from perfbench.isolation.sandbox.cgroup import PIDS_MAX

    cg = _cgroup_or_skip(version)
    try:
        if cg.pids_missing:
            pytest.skip(f"no pids controller here: {cg.pids_missing}")
        assert cg.pids_max == PIDS_MAX
        kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            cg.adopt(kid.pid)
            assert kid.pid in cg.pids()
        finally:
            kid.kill()
            kid.wait()
    finally:
        cg.remove()


HOG = r'''
import os, sys
for f in sys.argv[1:]:
    open(f, "w").write(str(os.getpid()))
fd = os.memfd_create("hog")          # memfd pages: not in RSS, charged to the cgroup all the same
os.ftruncate(fd, 512 << 20)
import mmap
m = mmap.mmap(fd, 512 << 20)
for off in range(0, 512 << 20, 4096):
    m[off] = 1
print("survived", flush=True)
'''


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_a_worker_cgroup_limits_its_memory_and_counts_the_kill(version, monkeypatch):
    """#39: the limit holds memfd pages too; the kernel's kill is counted, so the scorer can say
    `resource.memory` rather than `candidate.crashed`.  (Made ~128 MiB here.)"""
    from perfbench.isolation.sandbox import cgroupfs

    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert cgroupfs.worker_memory_max() <= cgroupfs.MEMORY_SHARE * total
    monkeypatch.setattr(cgroupfs, "MEMORY_SHARE", (128 << 20) / total)
    cg = _cgroup_or_skip(version)
    try:
        if cg.memory_missing:
            pytest.skip(f"no memory controller here: {cg.memory_missing}")
        assert abs(cg.memory_max - (128 << 20)) <= 1 << 20 and "memory 0.1 GiB" in cg.describe()
        # swap counted with memory where the kernel can (v1: memory.memsw, v2: memory.swap.max):
        # a worker may not page its way past the limit (#63)
        memory_dir = cg._dirs.get("memory", cg._dirs.get(""))   # (v1's, where a hybrid host has no v2 memory)
        swap_counted = any((memory_dir / f).exists() for f in ("memory.memsw.limit_in_bytes", "memory.swap.max"))
        assert cg.swap_max == (0 if swap_counted else None)
        assert ("no swap" in cg.describe()) == swap_counted
        assert cg.oom_kills() == 0
        hog = subprocess.run([sys.executable, "-c", HOG, *cg.procs_files], capture_output=True, text=True, timeout=60)
        assert hog.returncode == -signal.SIGKILL and "survived" not in hog.stdout
        assert cg.oom_kills() >= 1
    finally:
        cg.remove()
