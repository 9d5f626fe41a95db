"""Segment sums via a cumulative sum: O(n), handles empty segments and empty input."""
import torch


def segment_sum(values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    if lengths.numel() == 0:
        return values.new_zeros(0)
    if int(lengths.sum()) != values.numel() or bool((lengths < 0).any()):
        raise ValueError("lengths must be non-negative and sum to len(values)")
    csum = torch.cat([values.new_zeros(1, dtype=torch.float64), values.to(torch.float64).cumsum(0)])
    ends = lengths.cumsum(0)
    starts = ends - lengths
    return (csum[ends] - csum[starts]).to(values.dtype)
