"""Naive SpMV: expand row ids, gather val * x[col] into an nnz temporary, scatter-add by row."""
import torch


def kernel(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    rows = crow.numel() - 1
    row_ids = torch.repeat_interleave(torch.arange(rows), crow.diff())
    products = val * x[col]
    y = torch.zeros(rows, dtype=val.dtype)
    y.index_add_(0, row_ids, products)
    return y
