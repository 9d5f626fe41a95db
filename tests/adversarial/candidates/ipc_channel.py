"""Tries IPC and files as a channel between candidates: looks for what an earlier candidate left
in a System V shared memory segment (a fixed key), in /dev/shm and in its private directory
(TMPDIR) and /tmp, then leaves all of them for the next.  Its kernel is honest."""
import ctypes
import os
import sys
import tempfile

import torch

_KEY, _IPC_CREAT = 0x5EED1234, 0o1000
_NAME = "/dev/shm/perfbench-adversarial-channel"
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
seen = _libc.shmget(_KEY, 0, 0)
print(f"sysv: {'found' if seen >= 0 else 'none'}", file=sys.stderr)
print(f"shm file: {'found' if os.path.exists(_NAME) else 'none'}", file=sys.stderr)
_FILES = [os.path.join(tempfile.gettempdir(), "perfbench-adversarial-channel"), "/tmp/perfbench-adversarial-channel"]
print(f"private files: {'found' if any(os.path.exists(f) for f in _FILES) else 'none'}", file=sys.stderr)
made = _libc.shmget(_KEY, 4096, _IPC_CREAT | 0o666)
with open(_NAME, "w") as f:
    f.write("secret")
left = []
for name in _FILES:
    try:
        with open(name, "w") as f:
            f.write("secret")
        left.append(name)
    except OSError:
        pass
print(f"left: sysv {'yes' if made >= 0 else 'no'}, shm file yes, private files {len(left)}", file=sys.stderr, flush=True)


def kernel(x, y):
    return torch.add(y, x, alpha=2)
