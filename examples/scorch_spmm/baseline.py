"""Baseline: Scorch's default schedule for CSR x dense, through `scorch.einsum` with a dense
output (its compiler, not the hand-written kernels `scorch.matmul` picks for this pair)."""
import torch

import scorch


def kernel(crow, col, val, b):
    a = torch.sparse_csr_tensor(crow, col, val, (crow.numel() - 1, b.shape[0]), check_invariants=False)
    out = scorch.einsum("ij,jk->ik", scorch.from_torch(a, "A"), scorch.from_torch(b, "B"), format="dd")
    return out.to_torch(in_place=False)
