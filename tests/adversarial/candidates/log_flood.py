"""#58 (5): writes 256 MiB to stdout as it loads and 1 MiB to stderr in every call, to start a
disk's writeback while the baseline is timed.  Its output is a pipe the scorer drains, keeping
the last 64 KiB in memory: nothing reaches a disk, and it is scored on its (slower) calls."""
import os

import torch

_BLOCK = b"x" * (1 << 20)
for _ in range(256):
    os.write(1, _BLOCK)
os.write(1, b"\nloaded\n")


def kernel(x, y):
    os.write(2, _BLOCK)
    return torch.add(y, x, alpha=2)
