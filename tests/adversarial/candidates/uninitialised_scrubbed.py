"""Returns memory it never wrote, with any NaN (the 0xFF poison) replaced by zeros so that a
single-poison check sees plain wrong values rather than its own poison."""
import torch


def kernel(x, y):
    out = torch.empty_like(x)
    return torch.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0)
