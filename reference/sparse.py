"""Sparse products and conversions on CSR matrices given as (crow, col, val) tensors.

crow: int64 [rows + 1] row pointers; col: int64 [nnz] column of each value; val: [nnz].
"""
import warnings

import torch


def _csr(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, cols: int) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
        # check_invariants validates crow/col (monotone, in bounds) instead of risking a segfault.
        return torch.sparse_csr_tensor(crow, col, val, size=(crow.numel() - 1, cols), check_invariants=True)


def spmv_csr(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """y = A @ x."""
    return (_csr(crow, col, val, x.numel()) @ x.unsqueeze(1)).squeeze(1)


def spmm_csr(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Y = A @ B for a dense B [cols, k]."""
    return _csr(crow, col, val, b.shape[0]) @ b


def csr_transpose(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, cols: int) -> tuple:
    """(crow, col, val) of A.T, columns sorted within each row: the CSC arrays of A."""
    t = _csr(crow, col, val, cols).to_sparse_csc()
    return t.ccol_indices(), t.row_indices(), t.values()
