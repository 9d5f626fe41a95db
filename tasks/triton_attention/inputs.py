"""Inputs for triton_attention: q, k, v [batch, heads, n, d], float16, entries ~ N(0, 1).

`small` is sized for the Triton interpreter on a CPU (two query and two key tiles per head) and has a sequence
length that is not a multiple of the tile, so the kernel's masks are exercised.
"""
import torch

# size -> (batch, heads, n, d)
SIZES = {"small": (1, 2, 100, 16), "medium": (4, 8, 1024, 64), "large": (4, 16, 4096, 64)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(SIZES[size], generator=gen).to(torch.float16) for _ in range(3))
