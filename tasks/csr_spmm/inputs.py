"""Inputs for csr_spmm: (crow, col, val, b) of a random CSR matrix and a dense matrix b.

The sparsity pattern is drawn exactly as csr_spmv's is (row lengths uniform on [0, 2 * mean], so
some rows are empty; unique sorted columns per row).  A copy, not an import: the candidate's
sandbox sees only its task's own files, and the gate's worker runs this file there.
"""
import torch

# size -> (rows, cols, mean nonzeros per row, columns of b)
SIZES = {"small": (48, 40, 4, 7), "medium": (4096, 4096, 16, 64)}


def make_inputs(seed: int, size: str) -> tuple:
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {sorted(SIZES)}")
    rows, cols, per_row, k = SIZES[size]
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
    b = torch.randn(cols, k, generator=gen, dtype=torch.float32)
    return (crow, col.contiguous(), val, b)
