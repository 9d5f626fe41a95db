"""Naive GEMM: broadcast a[:, :, None] * b[None, :, :] into an [M, K, N] temporary, then sum over K."""
import torch


def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.unsqueeze(2) * b.unsqueeze(0)).sum(dim=1)
