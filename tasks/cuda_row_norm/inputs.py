"""Inputs for cuda_row_norm: one matrix x [rows, cols], float32.

`small` has a column count that is not a multiple of the block, so the strided loop's tail
is exercised.
"""
import torch

SIZES = {"small": (5, 300), "medium": (4096, 1024), "large": (16384, 4096)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    rows, cols = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, cols, generator=gen, dtype=torch.float32),)
