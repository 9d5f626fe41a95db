"""Output digests for the CUDA timer's late-write check.

Right after a timed call's end event the timer enqueues `digest(output)` on the timed stream:
the digest is of the bytes as they stand when the window closes.  The scorer later fetches one
iteration's output and digests the bytes it received with the same function.  Work the call left
running on another stream (or queued after the end event) that still writes the output makes
the two differ: `tamper.side_stream`, whichever stream it used and whether or not the profiled
gate call behaved.  (A synchronize inside the window used to guarantee this; docs/verdict.md.)

One definition for both places, in torch ops, so the CPU tests run the very code the GPU runs:
the output's bytes in logical order b_0..b_n-1, as (sum of b_i, sum of b_i * (i mod P + 1)).
The weighted sum sees values that move or swap, not only values that change.  Both sums are
exact int64 (b_i * weight < 2^24, so n may reach 2^39 bytes before the sum could overflow) and
integer addition does not depend on the reduction order: a GPU's and a CPU's agree bit for bit.
"""
from __future__ import annotations

from typing import Any

import torch

# A prime period for the weights: a shift of the bytes by anything but a multiple of it changes
# the weighted sum, and b_i * weight stays far inside int32.
WEIGHT_PERIOD = 65521
# Bytes digested per step (16 MiB): temporaries stay bounded whatever the output's size, and
# every step starts at a multiple of the period, so one weight vector per device serves them all.
CHUNK = WEIGHT_PERIOD * 256
_weights: dict[torch.device, torch.Tensor] = {}


def _weights_on(device: torch.device) -> torch.Tensor:
    w = _weights.get(device)
    if w is None:
        w = _weights[device] = torch.arange(CHUNK, device=device, dtype=torch.int32).remainder_(WEIGHT_PERIOD).add_(1)
    return w


def digest(t: torch.Tensor) -> torch.Tensor:
    """int64[2] on `t`'s device, computed on the current stream (no host synchronisation)."""
    b = t.detach().contiguous().reshape(-1).view(torch.uint8)
    w = _weights_on(b.device)
    parts = []
    for start in range(0, max(b.numel(), 1), CHUNK):
        c = b[start:start + CHUNK].to(torch.int32)
        parts.append(torch.stack((c.sum(dtype=torch.int64), (c * w[:c.numel()]).sum(dtype=torch.int64))))
    return parts[0] if len(parts) == 1 else torch.stack(parts).sum(0)


def digestible(x: Any) -> bool:
    """Strided tensors have bytes in a logical order; anything else is not digested."""
    return isinstance(x, torch.Tensor) and x.layout == torch.strided


def digest_pair(t: torch.Tensor) -> tuple[int, int]:
    """`digest` as two Python ints (synchronises with `t`'s device)."""
    s, ws = digest(t).tolist()
    return int(s), int(ws)
