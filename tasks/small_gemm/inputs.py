"""Inputs for small_gemm: a [M, K] and b [K, N], float32.

Entries are scaled by K**-0.25 so that C has entries of order 1 whatever K is.
"""
import torch

# size -> (M, K, N)
SIZES = {"small": (16, 32, 8), "medium": (128, 256, 128)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    m, k, n = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    scale = k ** -0.25
    a = torch.randn(m, k, generator=gen, dtype=torch.float32).mul_(scale)
    b = torch.randn(k, n, generator=gen, dtype=torch.float32).mul_(scale)
    return (a, b)
