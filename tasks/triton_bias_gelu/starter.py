"""Starting point: the same unfused epilogue as the baseline. Fuse it into one Triton kernel."""
import torch


def kernel(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    h = torch.add(x, bias)
    inner = torch.mul(torch.add(h, torch.mul(torch.pow(h, 3), 0.044715)), 0.7978845608028654)
    return torch.mul(torch.mul(h, 0.5), torch.add(torch.tanh(inner), 1.0))
