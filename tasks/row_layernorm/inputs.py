"""Inputs for row_layernorm: x [rows, cols], weight [cols], bias [cols], all float32.

Rows have mean ~2 and spread ~3, so a kernel that forgets to centre before squaring loses
precision; `small` has a column count that is not a multiple of any vector width.
"""
import torch

SIZES = {"small": (16, 100), "medium": (4096, 1024)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    rows, cols = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen, dtype=torch.float32).mul_(3.0).add_(2.0)
    weight = torch.randn(cols, generator=gen, dtype=torch.float32)
    bias = torch.randn(cols, generator=gen, dtype=torch.float32)
    return (x, weight, bias)
