"""#58 (4): leaves 64 MiB in /dev/shm as it loads, for the next worker of its zygote; a worker
that finds what an earlier one left computes wrong values (so the score is rejected exactly
when /dev/shm outlives a worker).  Each worker now gets its sandbox's /dev/shm emptied."""
import os

import torch

MARK = "/dev/shm/perfbench-leftover"
FOUND = os.path.exists(MARK)
if os.path.isdir("/dev/shm"):
    with open(MARK, "wb") as f:
        f.write(b"\0" * (64 << 20))


def kernel(x, y):
    out = torch.add(y, x, alpha=2)
    if FOUND:
        out += 1
    return out
