"""Starts threads at load until the kernel refuses one, and keeps them: an attack on the host's
pid space (seen on a host without a pids limit: ~30,800 tasks, and the scorer could no longer
start a thread).  The worker's cgroup stops it at its pids limit; the threads left running are
tripped at load.  Bounded here at 20,000 so that a host with no limit is not taken down."""
import sys
import threading
import time

_threads = []
try:
    while len(_threads) < 20_000:
        t = threading.Thread(target=time.sleep, args=(3600,), daemon=True)
        t.start()
        _threads.append(t)
except RuntimeError:
    pass
print(f"started {len(_threads)} threads", file=sys.stderr, flush=True)


def kernel(x, y):
    return torch.add(y, x, alpha=2)


import torch  # noqa: E402
