"""Inputs for cuda_transpose: one float32 matrix x [rows, cols].

`small` is not a multiple of the 32x32 tile in either dimension, so partial tiles are exercised.
"""
import torch

SIZES = {"small": (33, 70), "medium": (4096, 4096), "large": (8192, 8192)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    rows, cols = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, cols, generator=gen, dtype=torch.float32),)
