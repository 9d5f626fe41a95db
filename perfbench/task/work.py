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

WORK_COUNTED, WORK_DECLARED = "counted", "declared"


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
    import torch

    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, (tuple, list)):
        return sum(tensor_bytes(v) for v in values)
    if isinstance(values, dict):
        return sum(tensor_bytes(v) for v in values.values())
    return 0


def parse_work(table: dict[str, Any] | None, where: str) -> dict[str, Any] | None:
    """task.toml's [work]: `flops` (a number, or "none": no compute bound) and `bytes` (a
    number), one call's at the timed size; each wins over the count.  A reference that does more
    than the task needs (a sparse product torch runs dense) declares what the task needs."""
    from ..core.errors import UsageError

    if table is None:
        return None
    unknown = set(table) - {"flops", "bytes"}
    if unknown:
        raise UsageError(f"{where} [work]: unknown field {sorted(unknown)[0]!r} (it takes flops and bytes)")
    for key in ("flops", "bytes"):
        value = table.get(key)
        ok = value is None or (key == "flops" and value == "none") or (
            isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0)
        if not ok:
            raise UsageError(f"{where} [work]: {key} must be a positive number" + (' or "none"' if key == "flops" else "")
                             + f", got {value!r}")
    return dict(table)


def count_work(program: Any, size: str, seed: int = 0) -> Work:
    """One call's work at `size`: made with the task's own inputs and reference (`program` is a
    task.program.TaskProgram), with what the task declares in [work] in place of the counts."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    inputs = program.without_outputs(program.make_inputs(seed, size))   # (a DPS output counts once, as an output)
    with FlopCounterMode(display=False) as counter:
        outputs = program.reference(inputs)
    flops = int(counter.get_total_flops())
    floats = [x for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    dtype = str(max(floats, key=lambda x: x.numel()).dtype).removeprefix("torch.") if floats else None
    declared = (program.spec.work or {}) if size == program.spec.timed_size else {}
    n_bytes, bytes_source = tensor_bytes(inputs) + tensor_bytes(outputs), WORK_COUNTED
    if "bytes" in declared:
        n_bytes, bytes_source = int(declared["bytes"]), WORK_DECLARED
    flops_source = WORK_COUNTED if flops else None
    if "flops" in declared:
        flops = 0 if declared["flops"] == "none" else int(declared["flops"])
        flops_source = WORK_DECLARED
    return Work(bytes=n_bytes, flops=flops or None, bytes_source=bytes_source, flops_source=flops_source, dtype=dtype)
