"""The work of one call at a size, counted rather than guessed (#61): the compulsory traffic
(every input read once, every output written once, from the actual tensors) and the
floating-point operations of the reference, as torch's FlopCounterMode counts them.

FlopCounterMode counts the operations that dominate compute-bound kernels (matmul, convolution,
attention); elementwise and reduction work it leaves at 0, and such kernels are bound by their
bytes anyway.  So a count of 0 is reported as no flops (`None`): the bound is then memory-only.
Works for every task format, since each has inputs and a torch reference.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch

WORK_COUNTED = "counted"


@dataclass(frozen=True)
class Work:
    bytes: int            # compulsory traffic of one call: inputs read once, outputs written once
    flops: int | None     # None: nothing FlopCounterMode counts (the bound is memory-only)
    bytes_source: str = WORK_COUNTED
    flops_source: str | None = WORK_COUNTED
    dtype: str | None = None   # the largest floating-point input's: the FLOP/s that bound applies

    def __post_init__(self) -> None:
        if self.bytes <= 0:
            raise ValueError(f"a call moves a positive number of bytes, got {self.bytes}")
        if self.flops is not None and self.flops <= 0:
            raise ValueError(f"flops must be positive or None, got {self.flops}")

    def to_dict(self) -> dict:
        return asdict(self)


def tensor_bytes(values: Any) -> int:
    """The bytes of every tensor in `values` (nested tuples, lists and dicts; other values count 0)."""
    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, (tuple, list)):
        return sum(tensor_bytes(v) for v in values)
    if isinstance(values, dict):
        return sum(tensor_bytes(v) for v in values.values())
    return 0


def count_work(program: Any, size: str, seed: int = 0) -> Work:
    """One call's work at `size`: made with the task's own inputs and reference (`program` is a
    task.program.TaskProgram)."""
    from torch.utils.flop_counter import FlopCounterMode

    inputs = program.make_inputs(seed, size)
    with FlopCounterMode(display=False) as counter:
        outputs = program.reference(inputs)
    flops = int(counter.get_total_flops())
    floats = [x for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    dtype = str(max(floats, key=lambda x: x.numel()).dtype).removeprefix("torch.") if floats else None
    return Work(bytes=tensor_bytes(inputs) + tensor_bytes(outputs), flops=flops or None,
                flops_source=WORK_COUNTED if flops else None, dtype=dtype)
