"""The block-size attack, on tasks/row_softmax: 30 ms slower a call for 0.3 s from the first call
after the gate (the gate makes 6 calls of the medium size, then its input contract 5 more,
interleaved with the small ones), so the warm-up
sizes blocks on the baseline's 16 ms call; at full speed (~4 ms) from then on, in blocks of one
call: below the 10 ms floor the wall-clock checks assume, unless the sampler re-sizes."""
import time

import torch

_seen = {"small": 0, "medium": 0, "t0": None}


def kernel(x):
    size = "small" if x.shape[0] < 4096 else "medium"
    _seen[size] += 1
    if _seen["small"] and _seen["medium"] == 12:
        _seen["t0"] = time.monotonic()
    if _seen["t0"] is not None and time.monotonic() - _seen["t0"] < 0.3:
        time.sleep(0.03)
    return torch.softmax(x, dim=1)
