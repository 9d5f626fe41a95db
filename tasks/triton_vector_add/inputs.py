"""Inputs for triton_vector_add: two float32 vectors x, y of equal length.

Tensors go to "cuda" when available, else "cpu" so the Triton interpreter
(TRITON_INTERPRET=1, set before triton is imported) can run the solution.
"""
import torch

SIZES = {"small": 4096 + 3, "medium": 1 << 24}  # small is not a multiple of BLOCK: exercises the mask


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    n = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=gen, dtype=torch.float32)
    y = torch.randn(n, generator=gen, dtype=torch.float32)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return (x.to(device), y.to(device))
