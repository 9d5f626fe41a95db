"""Tries IPC as a channel between candidates: looks for what an earlier candidate left in a
System V shared memory segment (a fixed key) and in /dev/shm, then leaves both for the next.
Its kernel is honest."""
import ctypes
import os
import sys

import torch

_KEY, _IPC_CREAT = 0x5EED1234, 0o1000
_NAME = "/dev/shm/perfbench-adversarial-channel"
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
seen = _libc.shmget(_KEY, 0, 0)
print(f"sysv: {'found' if seen >= 0 else 'none'}", file=sys.stderr)
print(f"shm file: {'found' if os.path.exists(_NAME) else 'none'}", file=sys.stderr)
made = _libc.shmget(_KEY, 4096, _IPC_CREAT | 0o666)
with open(_NAME, "w") as f:
    f.write("secret")
print(f"left: sysv {'yes' if made >= 0 else 'no'}, shm file yes", file=sys.stderr, flush=True)


def kernel(x, y):
    return torch.add(y, x, alpha=2)
