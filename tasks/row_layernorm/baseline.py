"""Unfused layer norm as a PyTorch user writes it: torch.var_mean (one Welford pass), then four
elementwise passes over the output (centre, scale, weight, bias), in place.

(A first baseline built every step into a fresh 16 MB temporary; its time was set by page faults,
and swung +-35% between worker processes with the allocator's state: no stable s_ref.)
"""
import torch


def kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    var, mean = torch.var_mean(x, dim=1, unbiased=False, keepdim=True)
    out = torch.sub(x, mean)
    out.mul_(torch.rsqrt(var.add_(1e-5)))
    out.mul_(weight)
    return out.add_(bias)
