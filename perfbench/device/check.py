"""Which device a run asks for, checked before anything is started on it."""
from __future__ import annotations

from ..core.errors import EnvironmentUnavailable, UsageError


def check_device(device: str) -> str:
    """Validate a device string; CUDA must actually be usable."""
    if device == "cpu":
        return device
    if device == "cuda" or device.startswith("cuda:"):
        import torch

        if not torch.cuda.is_available():
            raise EnvironmentUnavailable(f"--device {device}: no CUDA device is available on this machine")
        return device
    raise UsageError(f"--device must be cpu or cuda[:N], got {device!r}")
