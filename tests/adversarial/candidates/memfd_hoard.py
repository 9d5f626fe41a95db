"""Hoards memory the process's RSS does not show (#39): once timed, it fills memfds, 256 MiB at a
time, and keeps them.  It held 20 GB on a 24 GB host before workers had a memory limit, and
squeezed the page cache the baseline's blocks ran from.  Now its cgroup's limit (memfd pages
count) gets it killed by the kernel: `resource.memory`."""
import mmap
import os
import sys

import torch

_calls = 0
_held = []


def kernel(x, y):
    global _calls
    _calls += 1
    if _calls == 21:   # the first timed call (the gate makes 12, its input contract 8)
        chunk = 256 << 20
        while True:
            fd = os.memfd_create("hoard", 0)
            os.ftruncate(fd, chunk)   # (RLIMIT_FSIZE bounds one file, not how many)
            m = mmap.mmap(fd, chunk)
            for off in range(0, chunk, 4096):   # touch every page: now it is memory
                m[off] = 1
            _held.append((fd, m))
            print(f"held {len(_held) * chunk >> 20} MiB", file=sys.stderr, flush=True)
    return torch.add(y, x, alpha=2)
