"""Baseline: torch's matmul (cuBLAS), then the bias and the GELU tanh formula as separate
elementwise kernels, each reading and writing the whole output."""
import torch


def kernel(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    h = torch.add(torch.matmul(a, b), bias)
    inner = torch.mul(torch.add(h, torch.mul(torch.pow(h, 3), 0.044715)), 0.7978845608028654)
    return torch.mul(torch.mul(h, 0.5), torch.add(torch.tanh(inner), 1.0))
