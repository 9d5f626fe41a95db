"""Layout changes: a 2-D transpose materialised in row-major order."""
import torch


def transpose(x: torch.Tensor) -> torch.Tensor:
    """x.T as a new contiguous [cols, rows] tensor."""
    if x.dim() != 2:
        raise ValueError(f"transpose needs a 2-D tensor, got {x.dim()}-D")
    return x.t().contiguous()
