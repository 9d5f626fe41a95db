"""What a worker's session used, read from outside (procfs.session_cpu_seconds, the CPU that
`tamper.threads` and the baseline-interference check read where no cgroup counts it): each
process by its CPU clock, to well under /proc's 10 ms tick, and children it reaped too."""
import subprocess
import sys
import time

import pytest

from perfbench.system import procfs

pytestmark = pytest.mark.skipif(not procfs.process_clocks_readable(), reason="no per-process CPU clocks (not Linux)")

# On each line of stdin: burn what the line says (seconds of this process's CPU, or of a child it
# starts and waits for), and report the CPU this process's own clock saw it take.
LEADER = r"""
import subprocess, sys, time
for line in sys.stdin:
    kind, s = line.split()
    t = time.process_time()
    if kind == "self":
        while time.process_time() - t < float(s):
            pass
    else:
        subprocess.run([sys.executable, "-c",
                        "import time\nt = time.process_time()\nwhile time.process_time() - t < %s: pass" % s])
    print(time.process_time() - t, flush=True)
"""


@pytest.fixture()
def leader():
    p = subprocess.Popen([sys.executable, "-c", LEADER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def _burn(p: subprocess.Popen, kind: str, seconds: float) -> tuple[float, float]:
    """(what the session's reading rose by, what the process's own clock saw)."""
    time.sleep(0.05)   # the previous reply's printing is over
    before = procfs.session_cpu_seconds(p.pid)
    p.stdin.write(f"{kind} {seconds}\n")
    p.stdin.flush()
    own = float(p.stdout.readline())
    time.sleep(0.05)
    return procfs.session_cpu_seconds(p.pid) - before, own


def test_a_few_milliseconds_are_read_to_well_under_a_tick(leader):
    """3 ms of CPU: /proc's ticks read it as 0 or 10 ms; the process's clock as 3 ms."""
    _burn(leader, "self", 0.001)   # the interpreter's first lines: imports, buffers
    for _ in range(3):
        read, own = _burn(leader, "self", 0.003)
        assert own >= 0.003
        assert abs(read - own) < 0.001, (read, own)


def test_a_child_the_session_started_and_reaped_is_counted(leader):
    """A child that did its work and was waited for leaves no process to read: what it used is
    in its parent's reaped-children count (ticks), which the reading adds."""
    read, own = _burn(leader, "child", 0.1)
    assert own < 0.02   # the leader itself only waited
    assert read >= 0.1 - 2 * procfs.TICK_S, read
