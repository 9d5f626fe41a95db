"""Device leases (device/lease.py): two measurements never share a core or a GPU."""
import os
import subprocess
import sys

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
