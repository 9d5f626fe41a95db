"""Reading a stopped worker's memory (isolation/arena.read_process_memory): process_vm_readv,
and the /proc/PID/mem read where that call is unavailable, give the same bytes; an address the
process has not mapped is an OSError (the scorer's `tamper.protocol`)."""
import os
import signal
import subprocess
import sys

import pytest
import torch

from perfbench.isolation import arena

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
