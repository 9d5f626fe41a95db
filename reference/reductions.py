"""Reductions: row norms and segment sums."""
import torch


def row_l2_norm(x: torch.Tensor) -> torch.Tensor:
    """sqrt(sum_j x[i, j]^2) for each row i of a 2-D tensor."""
    return torch.sqrt((x * x).sum(dim=1))


def segment_sum(values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Sum of each run of `lengths[i]` consecutive values (an empty run sums to 0)."""
    if int(lengths.sum()) != values.numel() or bool((lengths < 0).any()):
        raise ValueError("lengths must be non-negative and sum to len(values)")
    segment_of = torch.repeat_interleave(torch.arange(lengths.numel(), device=values.device), lengths)
    return torch.zeros(lengths.numel(), dtype=values.dtype, device=values.device).index_add_(0, segment_of, values)
