"""Fused bias + GELU in Triton (kernels/triton/bias_gelu.py): one read, one write."""
from pathlib import Path

import torch

from perfbench.task.user_files import load_module

_KERNELS = load_module(Path(__file__).resolve().parents[2] / "kernels" / "triton" / "bias_gelu.py")


def kernel(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return _KERNELS.bias_gelu(x, bias)
