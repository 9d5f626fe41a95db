"""Starting point: the same unfused layer norm as the baseline. Make it faster."""
import torch


def kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    var, mean = torch.var_mean(x, dim=1, unbiased=False, keepdim=True)
    out = torch.sub(x, mean)
    out.mul_(torch.rsqrt(var.add_(1e-5)))
    out.mul_(weight)
    return out.add_(bias)
