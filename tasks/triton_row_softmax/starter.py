"""Starting point: the same unfused softmax as the baseline. Write it as one Triton kernel."""
import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    row_max = torch.max(x, dim=1, keepdim=True).values
    shifted = torch.sub(x, row_max)
    e = torch.exp(shifted)
    denom = torch.sum(e, dim=1, keepdim=True)
    return torch.div(e, denom)
