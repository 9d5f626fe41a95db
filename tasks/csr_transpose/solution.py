"""CSR transpose by a counting sort on the column index: O(nnz + rows + cols), no dense matrix.

A stable sort by column keeps the nonzeros of each output row in ascending source-row order, so
the output's columns come out sorted without a second sort.
"""
import torch


def csr_transpose(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, cols: int) -> tuple:
    rows = crow.numel() - 1
    if rows < 0 or int(crow[0]) != 0 or int(crow[-1]) != col.numel() or col.numel() != val.numel():
        raise ValueError("crow must run from 0 to nnz, and col and val must have nnz entries")
    if bool((crow.diff() < 0).any()):
        raise ValueError("crow must be non-decreasing")
    if col.numel() and (int(col.min()) < 0 or int(col.max()) >= cols):
        raise ValueError(f"column indices must lie in [0, {cols})")
    counts = torch.bincount(col, minlength=cols)
    tcrow = torch.zeros(cols + 1, dtype=torch.int64)
    tcrow[1:] = torch.cumsum(counts, 0)
    row_of = torch.repeat_interleave(torch.arange(rows, dtype=torch.int64), crow.diff())
    order = torch.argsort(col, stable=True)
    return tcrow, row_of[order], val[order]
