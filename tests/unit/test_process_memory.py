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


def _readable(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/mem", "rb"):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("vm_readv", [True, False])
def test_both_ways_read_the_same_bytes(stopped_child, monkeypatch, vm_readv):
    pid, address = stopped_child
    if not _readable(pid):
        pytest.skip("no ptrace access to a child here (not root, or Yama ptrace_scope)")
    if not vm_readv:
        monkeypatch.setattr(arena, "_vm_read", lambda *args: None)
    expected = torch.arange(256, dtype=torch.uint8).repeat(4096)
    got = arena.read_process_memory(pid, address, expected.numel())
    assert got.dtype == torch.uint8 and torch.equal(got, expected)
    assert torch.equal(arena.read_process_memory(pid, address + 10, 5), expected[10:15])
    assert arena.read_process_memory(pid, address, 0).numel() == 0


@pytest.mark.parametrize("vm_readv", [True, False])
def test_an_unmapped_address_is_an_oserror(stopped_child, monkeypatch, vm_readv):
    pid, _ = stopped_child
    if not _readable(pid):
        pytest.skip("no ptrace access to a child here (not root, or Yama ptrace_scope)")
    if not vm_readv:
        monkeypatch.setattr(arena, "_vm_read", lambda *args: None)
    with pytest.raises(OSError):
        arena.read_process_memory(pid, 4096, 64)   # page 1: never mapped
