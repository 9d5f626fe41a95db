"""Scaled dot-product attention, written out."""
import math

import torch

from .softmax import softmax


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v over the last two dimensions; `causal` masks j > i."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if causal:
        n, m = scores.shape[-2], scores.shape[-1]
        future = torch.ones(n, m, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    return softmax(scores, dim=-1) @ v
