"""Inputs for scorch_spmm: A as CSR arrays (crow, col, val) with about 1% nonzeros placed
uniformly, and a dense B.  `small` is not a multiple of anything."""
import torch

SIZES = {"small": (64, 48, 8), "medium": (2048, 2048, 64)}   # (M, K, N)
DENSITY = 0.01


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    m, k, n = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    mask = torch.rand(m, k, generator=gen) < DENSITY
    a = (torch.randn(m, k, generator=gen) * mask).to_sparse_csr()
    return a.crow_indices(), a.col_indices(), a.values(), torch.randn(k, n, generator=gen)
