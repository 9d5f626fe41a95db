"""Honest while it is being gated, then skips half the work: counts calls.

The gate makes 2 sizes x 3 seeds x 2 poison patterns = 12 calls, then its input contract 2 sizes
x 4 standard transforms = 8 more; every later call is timed.
"""
import torch

_calls = 0


def kernel(x, y):
    global _calls
    _calls += 1
    if _calls <= 20:
        return torch.add(y, x, alpha=2)
    return x + y          # wrong, and cheaper than 2*x + y
