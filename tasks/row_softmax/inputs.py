"""Inputs for row_softmax: one float32 matrix x of shape [rows, cols]."""
import torch

SIZES = {"small": (64, 128), "medium": (4096, 1024)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    rows, cols = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    # Scale 4 gives logits wide enough that skipping the max-subtraction would overflow exp in places.
    x = torch.randn(rows, cols, generator=gen, dtype=torch.float32).mul_(4.0)
    return (x,)
