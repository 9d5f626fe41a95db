"""Row norms in one pass: a CUDA block per row reduces the squares with warp shuffles
(kernels/cuda/row_l2_norm.cu)."""
from pathlib import Path

import torch

from perfbench.task.native_build import CudaKernels

# Compiled by NVRTC at import (under the load timeout), never inside a timed call.
_CU = CudaKernels(Path(__file__).resolve().parents[2] / "kernels" / "cuda" / "row_l2_norm.cu", ["row_l2_norm"])


def kernel(x: torch.Tensor) -> torch.Tensor:
    if not x.is_cuda or x.dtype != torch.float32 or x.dim() != 2:
        raise ValueError("cuda_row_norm's kernel needs a 2-D float32 CUDA tensor")
    x = x.contiguous()
    out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
    if x.shape[0]:
        _CU.launch("row_l2_norm", (x.shape[0],), (256,), (x, out, x.shape[0], x.shape[1]))
    return out
