"""Correct, but leaves a thread running, named as the scorer's own gate thread ("perfbench-gate_0"):
a tripwire that let threads pass by name would let this one through."""
import threading
import time

import torch

_helper = None


def kernel(x, y):
    global _helper
    if _helper is None:
        _helper = threading.Thread(target=lambda: time.sleep(3600), name="perfbench-gate_0", daemon=True)
        _helper.start()
    return torch.add(y, x, alpha=2)
