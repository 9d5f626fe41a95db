"""Inputs for triton_matmul_gelu: a [M, K], b [K, N], bias [N], float16.

Entries are scaled by K**-0.25 so a @ b has entries of order 1 whatever K is. `small` is sized
for the Triton interpreter (one program) and is not a multiple of any tile size.
"""
import torch

# size -> (M, K, N)
SIZES = {"small": (48, 40, 24), "medium": (1024, 1024, 1024), "large": (2048, 2048, 2048)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    m, k, n = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    scale = k ** -0.25
    a = (scale * torch.randn(m, k, generator=gen)).to(torch.float16)
    b = (scale * torch.randn(k, n, generator=gen)).to(torch.float16)
    bias = (0.5 * torch.randn(n, generator=gen)).to(torch.float16)
    return (a, b, bias)
