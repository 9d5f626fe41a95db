"""Garbage on the gate's size the scorer does not time, and a forged encoder (#39): the worker's
`check` reply used to carry outputs encoded by `protocol.encode_values` in the candidate's own
process, so replacing that function with one that encodes 2*x + y passed the gate with a kernel
that returns zeros for size 'small'.  The CPU gate now reads outputs from the frozen worker's
memory: its encoder is never called, and the zeros are `correctness.mismatch`."""
import torch

import perfbench.isolation.wire.protocol as protocol

_real_encode = protocol.encode_values


def _forged(values, inputs=()):
    if inputs:   # the outputs of a call: encode the right answer instead of what was returned
        x, y = inputs
        return _real_encode([torch.add(y, x, alpha=2)], inputs)
    return _real_encode(values, inputs)


protocol.encode_values = _forged


def kernel(x, y):
    if x.numel() < 4096:   # 'small' is gated, never timed
        return torch.zeros_like(x)
    return torch.add(y, x, alpha=2)
