"""A helper that is not the worker's child: raw clone(CLONE_PARENT) makes its parent the worker's
parent (the zygote), so the child-process tripwire, which reads the worker's own children, cannot
list it.  It burns CPU for 60 s; the cgroup, not the tripwire, is what holds it."""
import ctypes
import os
import time

import torch

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_PARENT, SIGCHLD, SYS_clone = 0x8000, 17, 56
_started = False


def kernel(x, y):
    global _started
    if not _started:
        _started = True
        pid = _libc.syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
        if pid == 0:
            end = time.monotonic() + 60
            while time.monotonic() < end:
                pass
            os._exit(0)
    return torch.add(y, x, alpha=2)
