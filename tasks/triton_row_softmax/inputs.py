"""Inputs for triton_row_softmax: one matrix x [rows, cols], float32.

`small` is sized for the Triton interpreter on a CPU (a handful of programs) and has a column
count that is not a power of two, so the kernel's mask is exercised.
"""
import torch

SIZES = {"small": (8, 100), "medium": (4096, 1024), "large": (8192, 4096)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    rows, cols = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    # Scale 4: logits wide enough that skipping the max-subtraction overflows exp in places.
    return (torch.randn(rows, cols, generator=gen, dtype=torch.float32).mul_(4.0),)
