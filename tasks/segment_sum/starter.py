"""A first attempt: right for ordinary input, but torch.stack fails when there are no segments
and lengths are never validated."""
import torch


def segment_sum(values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    parts = torch.split(values, lengths.tolist())
    return torch.stack([p.sum() for p in parts])
