"""Transpose through 32x32 shared-memory tiles, coalesced on both sides
(kernels/cuda/transpose.cu)."""
from pathlib import Path

import torch

from perfbench.task.native_build import CudaKernels

# Compiled by NVRTC at import (under the load timeout), never inside a timed call.
_CU = CudaKernels(Path(__file__).resolve().parents[2] / "kernels" / "cuda" / "transpose.cu", ["transpose_tiled"])


def kernel(x: torch.Tensor) -> torch.Tensor:
    if not x.is_cuda or x.dtype != torch.float32 or x.dim() != 2:
        raise ValueError("cuda_transpose's kernel needs a 2-D float32 CUDA tensor")
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty((cols, rows), device=x.device, dtype=x.dtype)
    if x.numel():
        _CU.launch("transpose_tiled", ((cols + 31) // 32, (rows + 31) // 32), (32, 8), (x, out, rows, cols))
    return out
