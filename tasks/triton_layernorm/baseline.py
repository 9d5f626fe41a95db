"""Naive layer norm: each step a separate kernel with its own full-size temporary."""
import torch


def kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    mean = torch.mean(x, dim=1, keepdim=True)
    centred = torch.sub(x, mean)
    var = torch.mean(torch.mul(centred, centred), dim=1, keepdim=True)
    normed = torch.mul(centred, torch.rsqrt(torch.add(var, 1e-5)))
    return torch.add(torch.mul(normed, weight), bias)
