"""Writes into its private directory (TMPDIR) until the write fails, and lets the error raise
(#39): the private directory is a size-bounded tmpfs, and a call that fails on one of its
sandbox's limits is rejected with that limit's code, `resource.disk`, not `candidate.raised`."""
import os
import tempfile

import torch

_calls = 0


def kernel(x, y):
    global _calls
    _calls += 1
    if _calls == 21:   # the first timed call (the gate makes 12, its input contract 8)
        chunk = b"\xab" * (16 << 20)
        for i in range(1 << 20):
            with open(os.path.join(tempfile.gettempdir(), f"fill-{i}"), "wb") as f:
                for _ in range(8):
                    f.write(chunk)
    return torch.add(y, x, alpha=2)
