"""Starting point: the same strided copy as the baseline. Write a tiled CUDA transpose."""
import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous()
