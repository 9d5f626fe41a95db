"""Does the work for the first call of each timed block only and returns junk for the rest.

Defeated only if the scorer picks which iteration to check among all of them: a scorer that
always fetched iteration 0 would see honest outputs every time.
"""
import time

import torch

_calls = 0
_last = 0.0


def kernel(x, y):
    global _calls, _last
    _calls += 1
    now = time.monotonic()
    first_in_block = now - _last > 1e-3
    _last = now
    if _calls <= 20 or first_in_block:          # the gate's 20 calls (12, the contract's 8), then each block's first
        return torch.add(y, x, alpha=2)
    return y.clone()
