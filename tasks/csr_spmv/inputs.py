"""Inputs for csr_spmv: (crow, col, val, x) of a random CSR matrix and a dense vector.

Row lengths vary (uniform on [0, 2 * mean]), so some rows are empty; column indices are
unique and sorted within each row.
"""
import torch

# size -> (rows, cols, mean nonzeros per row)
SIZES = {"small": (64, 96, 8), "medium": (20000, 20000, 32)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    rows, cols, per_row = SIZES[size]
    gen = torch.Generator().manual_seed(seed)
    counts = torch.randint(0, 2 * per_row + 1, (rows,), generator=gen)
    row_of = torch.repeat_interleave(torch.arange(rows), counts)
    col_draw = torch.randint(0, cols, (row_of.numel(),), generator=gen)
    # Unique (row, col) keys come back sorted: row-major order, ascending columns within a row.
    keys = torch.unique(row_of * cols + col_draw)
    row_idx, col = keys // cols, keys % cols
    crow = torch.zeros(rows + 1, dtype=torch.int64)
    crow[1:] = torch.cumsum(torch.bincount(row_idx, minlength=rows), 0)
    val = torch.randn(col.numel(), generator=gen, dtype=torch.float32)
    x = torch.randn(cols, generator=gen, dtype=torch.float32)
    return (crow, col.contiguous(), val, x)
