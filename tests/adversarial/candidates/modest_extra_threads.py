"""Takes every core (the task allows one) for one call in four, the rest single-threaded: its
CPU per timed block is only ~1.1-1.3 cores' worth.  An allowance of a quarter core per block (the
first version of the check) let it through; what is allowed now is 2% of a core plus 0.5 ms."""
import os

import torch

os.sched_setaffinity(0, range(os.cpu_count() or 1))
_A = torch.randn(1 << 16)   # two grains of torch's parallel_for (32768): a parallel region, ~0.1 ms
_B = torch.empty_like(_A)
_calls = 0


def kernel(x, y):
    global _calls
    _calls += 1
    torch.set_num_threads((os.cpu_count() or 1) if _calls % 4 == 0 else 1)
    torch.exp(_A, out=_B)
    return 2 * x + y
