"""The child-process tripwire reads the kernel's per-thread `children` lists (#38): its cost no
longer depends on how many processes share the worker's PID namespace, and it finds what the
scan of /proc found."""
import subprocess
import sys
import threading
import time

from perfbench.isolation.processes import integrity
from perfbench.isolation.processes.integrity import _child_pids, _child_pids_by_scan

SLEEPER = [sys.executable, "-c", "import time; time.sleep(30)"]


def test_a_child_forked_by_a_thread_that_is_still_running_is_found():
    """Listed under that thread's own `children` file, not the main thread's."""
    forked, release, box = threading.Event(), threading.Event(), {}

    def fork_and_wait() -> None:
        box["child"] = subprocess.Popen(SLEEPER)
        forked.set()
        release.wait()

    helper = threading.Thread(target=fork_and_wait)
    helper.start()
    forked.wait()
    try:
        assert box["child"].pid in _child_pids()
        assert _child_pids() == _child_pids_by_scan()
    finally:
        box["child"].kill()
        box["child"].wait()
        release.set()
        helper.join()


def test_a_zombie_child_is_not_counted_and_a_reaped_one_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:   # exited, not yet reaped: a zombie
        with open(f"/proc/{child.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.01)
    assert child.pid not in _child_pids()
    child.wait()
    assert child.pid not in _child_pids()


def test_without_children_files_the_scan_of_proc_is_used(monkeypatch):
    child = subprocess.Popen(SLEEPER)
    try:
        def no_children_files(path, *args, **kwargs):   # a kernel without CONFIG_PROC_CHILDREN
            if str(path).endswith("/children"):
                raise FileNotFoundError(path)
            return open(path, *args, **kwargs)

        scanned = []
        monkeypatch.setattr(integrity, "open", no_children_files, raising=False)
        monkeypatch.setattr(integrity, "_child_pids_by_scan", lambda: scanned.append(1) or _child_pids_by_scan())
        assert child.pid in _child_pids() and scanned
    finally:
        child.kill()
        child.wait()
