"""Trusted SpMV: build the matrix as a torch sparse CSR tensor and multiply (works in float64)."""
import warnings

import torch


def reference(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
        # check_invariants validates crow/col (monotone, in bounds) instead of risking a segfault.
        a = torch.sparse_csr_tensor(
            crow, col, val, size=(crow.numel() - 1, x.numel()), check_invariants=True
        )
    return (a @ x.unsqueeze(1)).squeeze(1)
