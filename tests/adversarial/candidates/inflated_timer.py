"""Makes the worker's clock run 1000x fast, so its reports exceed what the scorer saw.

Pointless for a candidate (its own time is the scorer's), but a reported time the scorer's
clock cannot contain is proof of tampering, and says so."""
import sys
import time
import types

import torch

_real = time.perf_counter_ns
sys.modules["perfbench.timing.timers"].time = types.SimpleNamespace(perf_counter_ns=lambda: _real() * 1000)


def kernel(x, y):
    return torch.add(y, x, alpha=2)
