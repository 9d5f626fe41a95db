"""Inputs for triton_bias_gelu: x [rows, cols] and bias [cols], float32.

`small` is sized for the Triton interpreter on a CPU (a handful of programs) and has a column
count that is not a power of two, so the kernel's mask is exercised.
"""
import torch

SIZES = {"small": (6, 300), "medium": (4096, 1024), "large": (8192, 4096)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    rows, cols = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen, dtype=torch.float32).mul_(2.0)
    bias = torch.randn(cols, generator=gen, dtype=torch.float32)
    return (x, bias)
