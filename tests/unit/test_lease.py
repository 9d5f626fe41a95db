"""Device leases (device/lease.py): two measurements never share a core or a GPU."""
import os
import subprocess
import sys
import time

import pytest

from perfbench.device import lease


@pytest.fixture(autouse=True)
def _own_lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(lease.LOCK_DIR_VAR, str(tmp_path / "locks"))


def test_two_cpu_leases_take_different_cores():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores")
    with lease.acquire("cpu", 1) as a, lease.acquire("cpu", 1) as b:
        assert a.cpus and b.cpus and set(a.cpus).isdisjoint(b.cpus)


def test_cpu_leases_are_served_in_turn():
    """A lease of every core waits for a held one; a one-core lease asked for after it waits
    behind it, though a core is free, and the lease of every core comes as the held one goes
    (without the turnstile one-core scores that keep overlapping took the free core each time)."""
    import threading

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("needs two cores")
    held = lease.acquire("cpu", 1)
    got, told = [], []
    everything = threading.Thread(target=lambda: got.append(lease.acquire("cpu", len(cores), timeout_s=10,
                                                                           waiting=told.append)))
    everything.start()
    try:
        deadline = time.monotonic() + 5
        while not told and time.monotonic() < deadline:
            time.sleep(0.01)
        assert told == ["waiting for a free core (another measurement holds it)"]
        with pytest.raises(TimeoutError, match="no free cores within 0.5 s"):
            lease.acquire("cpu", 1, timeout_s=0.5)
        assert got == []
    finally:
        held.release()
        everything.join(10)
    assert got and got[0].cpus == tuple(cores)
    got[0].release()
    with lease.acquire("cpu", 1, timeout_s=1):   # the turnstile is free again
        pass


def test_a_taken_device_waits_then_times_out_with_a_message():
    told = []
    with lease.acquire("cuda:0") as held:
        assert held.cpus == ()
        with pytest.raises(TimeoutError, match="no free device within 0.3 s"):
            lease.acquire("cuda:0", timeout_s=0.3, waiting=told.append)
    assert told == ["waiting for cuda:0 (another measurement holds it)"]
    with lease.acquire("cuda:0", timeout_s=0.3):   # released: free again
        pass


def test_a_killed_holder_leaves_the_device_free(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom perfbench.device import lease\n"
                               "l = lease.acquire('cuda:0'); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(TimeoutError):
            lease.acquire("cuda:0", timeout_s=0.2)
    finally:
        holder.kill()
        holder.wait()
    with lease.acquire("cuda:0", timeout_s=2):
        pass


@pytest.mark.parametrize("device", ["cuda:0", "cpu"])
def test_the_pytest_plugin_and_a_score_take_one_lease(device, monkeypatch):
    """#58 (8): the plugin locked a per-user file named by the string "cuda:0", a score the GPU's
    PCI address under /tmp/perfbench-locks, so both could time one GPU at once.  Now the plugin
    takes the score's lease (on the CPU every core it may use: it times in its own process)."""
    from perfbench.pytest_plugin import fixture

    monkeypatch.setattr(fixture, "LEASE_TIMEOUT_S", 0.3)
    with lease.acquire(device, 1):
        with pytest.raises(TimeoutError, match="within 0.3 s"):
            with fixture.device_lock(device):
                pass
    with fixture.device_lock(device) as window:
        with pytest.raises(TimeoutError):
            lease.acquire(device, 1, timeout_s=0.3)
    assert len(window) == 2 and window[0] <= window[1]
    with lease.acquire(device, 1, timeout_s=0.3):   # released with the measurement
        pass
