"""Starting point: the same three-kernel row norm as the baseline. Write it as one CUDA reduction."""
import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(torch.sum(torch.mul(x, x), dim=1))
