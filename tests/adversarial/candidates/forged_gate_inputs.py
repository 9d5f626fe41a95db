"""Writes into its input on the gate's untimed size, and forges the inputs the worker reports
(#39): the `check` reply's inputs were encoded in the candidate's process, so encoding a copy
taken before the write hid it.  The CPU gate now reads the inputs back from the arena the
scorer owns: `correctness.input_mutated`."""
import torch

import perfbench.isolation.wire.protocol as protocol

_real_encode = protocol.encode_values
_before: list = []


def _forged(values, inputs=()):
    if not inputs and _before:   # the inputs of a call: report them as they were
        return _real_encode(list(_before), ())
    return _real_encode(values, inputs)


protocol.encode_values = _forged


def kernel(x, y):
    out = torch.add(y, x, alpha=2)
    _before[:] = []
    if x.numel() < 4096:   # 'small' is gated, never timed
        _before[:] = [x.clone(), y.clone()]
        y.add_(1.0)
    return out
