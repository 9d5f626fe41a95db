"""Correct values, but after the gate each output's pages are made PROT_NONE before returning:
the scorer's read of the frozen worker's memory faults (process_vm_readv) where /proc/PID/mem
would have read through.  Must be refused, never hang or crash the scorer."""
import ctypes
import mmap

import torch

_calls = 0
_libc = ctypes.CDLL(None, use_errno=True)
PAGE = mmap.PAGESIZE


def kernel(x, y):
    global _calls
    _calls += 1
    n = x.numel() * 4
    buf = mmap.mmap(-1, n + PAGE)
    out = torch.frombuffer(buf, dtype=torch.float32, count=x.numel()).view(x.shape)
    torch.add(y, x, alpha=2, out=out)
    if _calls > 20:   # once timed (the gate makes 12 calls, its input contract 8)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        _libc.mprotect(ctypes.c_void_p(addr), ctypes.c_size_t(n + PAGE), 0)
    kernel.keep = getattr(kernel, "keep", []) + [buf]
    return out
