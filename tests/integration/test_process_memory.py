"""Reading a stopped worker's memory (isolation/arena.read_process_memory): process_vm_readv,
and the /proc/PID/mem read where that call is unavailable, give the same bytes; an address the
process has not mapped is an OSError (the scorer's `tamper.protocol`)."""
import os
import signal
import subprocess
import sys

import pytest
import torch

from perfbench.isolation.wire import arena

CHILD = ("import ctypes, sys, time\n"
         "buf = ctypes.create_string_buffer(bytes(range(256)) * 4096)\n"   # 1 MiB of known bytes
         "print(ctypes.addressof(buf), flush=True)\n"
         "time.sleep(60)\n")


@pytest.fixture
def stopped_child():
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        address = int(proc.stdout.readline())
        os.kill(proc.pid, signal.SIGSTOP)
        yield proc.pid, address
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(params=["process_vm_readv", "/proc/PID/mem"])
def child(request, stopped_child, monkeypatch):
    """The stopped child, read one way or the other (the /proc read where process_vm_readv is
    unavailable); skipped where this user may not read another process's memory at all."""
    pid, _ = stopped_child
    try:
        open(f"/proc/{pid}/mem", "rb").close()
    except OSError:
        pytest.skip("no ptrace access to a child here (not root, or Yama ptrace_scope)")
    if request.param == "/proc/PID/mem":
        monkeypatch.setattr(arena, "_vm_read", lambda *args: None)
    return stopped_child


def test_both_ways_read_the_same_bytes(child):
    pid, address = child
    expected = torch.arange(256, dtype=torch.uint8).repeat(4096)
    got = arena.read_process_memory(pid, address, expected.numel())
    assert got.dtype == torch.uint8 and torch.equal(got, expected)
    assert torch.equal(arena.read_process_memory(pid, address + 10, 5), expected[10:15])
    assert arena.read_process_memory(pid, address, 0).numel() == 0


def test_an_unmapped_address_is_an_oserror(child):
    pid, _ = child
    with pytest.raises(OSError):
        arena.read_process_memory(pid, 4096, 64)   # page 1: never mapped


UFFD_CHILD = """
import ctypes, mmap, os, struct, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
fd = libc.syscall(323, os.O_CLOEXEC | os.O_NONBLOCK)   # userfaultfd (x86_64)
if fd < 0:
    print(-1, flush=True)
    time.sleep(60)
api = ctypes.create_string_buffer(struct.pack("QQQ", 0xAA, 0, 0))
assert libc.ioctl(fd, ctypes.c_ulong(0xC018AA3F), api) == 0                # UFFDIO_API
page = mmap.mmap(-1, 4096)
address = ctypes.addressof(ctypes.c_char.from_buffer(page))
reg = ctypes.create_string_buffer(struct.pack("QQQQ", address, 4096, 1, 0))  # MODE_MISSING
libc.madvise(ctypes.c_void_p(address), ctypes.c_size_t(4096), 4)           # MADV_DONTNEED: missing again
assert libc.ioctl(fd, ctypes.c_ulong(0xC020AA00), reg) == 0                # UFFDIO_REGISTER
print(address, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(__import__("platform").machine() != "x86_64", reason="the child uses x86_64's syscall number")
def test_a_read_of_a_page_nobody_serves_ends_at_its_deadline():
    """#39: a page registered with userfaultfd (and never served) blocked the scorer's read for
    good.  With a deadline the read raises MemoryReadTimeout; killing the process ends it."""
    import threading
    import time

    proc = subprocess.Popen([sys.executable, "-c", UFFD_CHILD], stdout=subprocess.PIPE, text=True)
    try:
        address = int(proc.stdout.readline())
        if address < 0:
            pytest.skip("userfaultfd refused to this test's process")
        t0 = time.monotonic()
        with pytest.raises(arena.MemoryReadTimeout):
            arena.read_process_memory(proc.pid, address, 64, timeout_s=0.3)
        assert time.monotonic() - t0 < 2
        readers = [t for t in threading.enumerate() if t.name == "perfbench-memory-read"]
        assert readers, "the blocked read is left on its thread"
    finally:
        proc.kill()
        proc.wait()
    for t in readers:
        t.join(5)
        assert not t.is_alive()   # the process's death ended it


def test_a_timed_output_read_past_its_deadline_kills_the_worker_and_rejects(monkeypatch):
    """The scorer's side (sides/cpu_side.py): the read gets the call's timeout, and one that
    does not end in it is `tamper.protocol`, with the worker killed (which ends the read)."""
    import numpy as np

    from perfbench.core.errors import CandidateRejected
    from perfbench.sides import cpu_side

    class Client:
        worker_pid, killed = 12345, 0
        input_arena = type("Arena", (), {"size": 4096})()

        def kill(self):
            self.killed += 1

    seen = {}

    def blocked(pid, address, nbytes, timeout_s=None):
        seen["timeout_s"] = timeout_s
        raise arena.MemoryReadTimeout(f"reading {nbytes} bytes at {address:#x} took over {timeout_s:g} s")

    monkeypatch.setattr(cpu_side, "read_process_memory", blocked)
    client = Client()
    side = cpu_side.ArenaSide(client, None, None, [torch.zeros(4)], 1 << 40, 7.5)
    record = np.zeros(arena.RECORD_INTS, dtype=np.int64)
    record[0], record[1] = arena.KIND_EXPECTED, 1 << 20
    with pytest.raises(CandidateRejected) as exc:
        side._read_output(record, torch.zeros(4), "timed iteration 3", 1 << 20)
    assert exc.value.reason == "tamper.protocol" and "took over 7.5 s" in exc.value.message
    assert seen["timeout_s"] == 7.5 and client.killed == 1
