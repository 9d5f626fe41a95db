"""Causal attention as one fused Triton kernel (kernels/triton/attention.py)."""
from pathlib import Path

import torch

from perfbench.task.user_files import load_module

_KERNELS = load_module(Path(__file__).resolve().parents[2] / "kernels" / "triton" / "attention.py")


def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return _KERNELS.attention(q, k, v, causal=True)
